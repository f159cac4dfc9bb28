# frozen_string_literal: true

module CodeCell
  VERSION = "0.1.0"
end
