# frozen_string_literal: true

module CodeCell
  # A named persistent sandbox of a cell: variables, definitions and files in /work live from
  # one eval to the next (docs/sessions.md in the repository). An eval that hits a limit ends
  # the session; the next eval starts a fresh one.
  class Session
    attr_reader :name, :cell

    def initialize(cell, name)
      @cell = cell
      @name = name.to_s
    end

    # A result whose session had ended since the last eval (killed from outside, or by a thread
    # of its own) ran in a fresh one, and says so in #state_lost. Takes Cell#run's timeout_ms:,
    # stdin:, argv:, env:, files: (which stay in its /work) and on_output: (or a block), for
    # this eval.
    def eval(code, **run_input, &block)
      given = Cell.run_input(**run_input.merge(on_output: run_input[:on_output] || block))
      @cell.send(:session_eval, @name, code, given)
    end

    # The same session: the same name in the same cell.
    def ==(other)
      other.is_a?(Session) && other.cell.equal?(@cell) && other.name == @name
    end
    alias eql? ==

    def hash
      [@cell.object_id, @name].hash
    end

    def inspect
      "#<#{self.class} #{@name.inspect} of #{@cell.language} cell #{@cell.object_id}>"
    end

    # Drops the state: the next eval starts a fresh interpreter. Returns self.
    def reset
      close
      self
    end

    # Ends the session's sandbox. True when one was running.
    def close
      @cell.send(:session_close, @name)
    end
  end
end
