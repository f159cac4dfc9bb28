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

    def eval(code)
      @cell.send(:session_eval, @name, code)
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
