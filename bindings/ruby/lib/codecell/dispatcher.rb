# frozen_string_literal: true

module CodeCell
  # Runs the host tools' blocks. The engine calls a tool on a thread of its own, which may not
  # touch Ruby: it queues the call (Native.next_call takes it off the queue) and waits for the
  # answer. One Ruby thread per process takes the calls and answers each from a Ruby thread of
  # its own, so a slow block holds up only its own call. Blocks are found by a key, so a call
  # that arrives for a closed cell gets an error instead of a block that is gone. The keys hold
  # the blocks weakly (each cell holds its own): a block usually sees the variable its cell is
  # in, and a strong reference from here would keep every such cell from being collected.
  module Dispatcher
    @lock = Mutex.new
    @tools = ObjectSpace::WeakMap.new # Integer key => block
    @counter = 0
    @thread = nil
    @pid = nil

    class << self
      # Files the callable under a new key (the engine's handler carries the key) and makes
      # sure the dispatching thread runs. The caller keeps the callable alive.
      def register(callable)
        @lock.synchronize do
          @counter += 1
          key = @counter
          @tools[key] = callable
          start_locked
          key
        end
      end

      def thread
        @thread
      end

      private

      def start_locked
        # A forked child has no dispatching thread even when its parent had one.
        return if @thread&.alive? && @pid == Process.pid

        @pid = Process.pid
        @thread = Thread.new { take_calls }
        @thread.name = "codecell-tools"
        @thread.report_on_exception = false
      end

      def take_calls
        loop do
          call = Native.next_call
          next unless call

          Thread.new(call) { |c| answer(c) }.report_on_exception = false
        end
      end

      def answer(call)
        answered = false
        tool = @lock.synchronize { @tools[Integer(call.tool_id)] }
        unless tool
          call.fail("the cell of this tool was closed")
          return answered = true
        end
        value = invoke(tool, JSON.parse(call.args_json))
        call.reply(Answer.json(value)) # what JSON cannot hold as its inspect
        answered = true
      rescue Exception => e # rubocop:disable Lint/RescueException -- a guest gets every failure
        call.fail("#{e.class}: #{e.message}")
        answered = true
      ensure
        # The block ended its thread (Thread#kill, throw past it): answer now, not at the limit.
        call.fail("the tool's thread ended before it answered") unless answered
      end

      # Keyword arguments for a block that declares keywords (|city:, days: 1|), the Hash for
      # one that takes a parameter, nothing for one that takes none.
      def invoke(tool, args)
        params = tool.is_a?(Proc) || tool.is_a?(Method) ? tool.parameters : tool.method(:call).parameters
        if params.any? { |kind, _| %i[key keyreq keyrest].include?(kind) }
          tool.call(**args.transform_keys(&:to_sym))
        elsif params.empty?
          tool.call
        else
          tool.call(args)
        end
      end
    end
  end
end
