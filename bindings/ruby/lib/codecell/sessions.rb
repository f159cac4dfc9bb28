# frozen_string_literal: true

require "weakref"

module CodeCell
  # The session an eval without a name runs in, as the seed's Repl names it.
  DEFAULT_SESSION = "default"

  # The process-wide view of sessions, as the seed's Repl keeps them: every open cell of the
  # process, and the sessions open in each. A cell is held weakly here: one dropped without
  # #close is still collected (its finalizer closes it).
  module Sessions
    # object_id => WeakRef (Ruby 3.1's WeakMap#keys can crash with such a table).
    @cells = {}
    @lock = Thread::Mutex.new

    class << self
      def register(cell)
        @lock.synchronize { @cells[cell.object_id] = WeakRef.new(cell) }
      end

      def unregister(cell)
        @lock.synchronize { @cells.delete(cell.object_id) }
      end

      # The cells open now (in no promised order).
      def cells
        @lock.synchronize do
          @cells.delete_if { |_, ref| !ref.weakref_alive? }
          @cells.values.filter_map { |ref| ref.__getobj__ rescue nil } # rubocop:disable Style/RescueModifier
        end.reject(&:closed?)
      end
    end
  end

  class << self
    # Every session open now in any cell of this process, as CodeCell::Session objects (each
    # knows its #name and its #cell).
    def sessions
      Sessions.cells.flat_map do |cell|
        cell.sessions.map { |name| cell.session(name) }
      rescue Error
        [] # closed meanwhile
      end
    end

    # Closes the session of that name in every open cell. True when one was open.
    def close_session(name = DEFAULT_SESSION)
      Sessions.cells.map { |cell| close_quietly(cell, name) }.any?
    end

    # Closes every session of every open cell (the cells stay open). Returns how many were.
    def close_all
      Sessions.cells.sum { |cell| cell.close_all }
    end

    private

    def close_quietly(cell, name)
      cell.close_session(name)
    rescue Error
      false # the cell was closed meanwhile
    end
  end
end
