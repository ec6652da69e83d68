# SPDX-License-Identifier: MIT
#
# Loaded by sp-record into the Ruby processes it starts (RUBYOPT=-r<this>).
#
# The default: the C extension beside this file, 3.1/stackpulse_hook.so (for
# Ruby 3.1), an event hook that marks each method's start and stop with
# markers of its own, which sp-record records (docs/spans.md). sp-record
# looks for the same file to decide which probes to attach, so the two agree.
#
# Otherwise Ruby's own method__entry/method__return USDT probes are used;
# they fire only while an event hook for :call/:return is installed in the
# process. This installs the cheapest one there is: a C function that does
# nothing, registered with rb_add_event_hook() through Fiddle, so no Ruby
# code runs per call; or an empty TracePoint block (about twice as slow)
# when Fiddle or the symbols are missing.
#
# STACKPULSE_RUBY_HOOK: unset or "hook" the extension, "c" the Fiddle hook,
# "tracepoint" the block, "none" no activator (for measurements).
module StackPulseActivate
  RUBY_EVENT_CALL = 0x0008
  RUBY_EVENT_RETURN = 0x0010

  def self.hook_path
    File.join(__dir__, RUBY_VERSION[/\A\d+\.\d+/].to_s, 'stackpulse_hook.so')
  end

  def self.c_hook
    require 'fiddle'
    h = Fiddle::Handle::DEFAULT
    add = Fiddle::Function.new(h['rb_add_event_hook'],
                               [Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP],
                               Fiddle::TYPE_VOID)
    # The hook is called as f(event, data, self, mid, klass); pthread_self()
    # ignores its arguments, touches nothing and returns at once.
    add.call(h['pthread_self'], RUBY_EVENT_CALL | RUBY_EVENT_RETURN, 0)
    true
  end

  def self.activate
    mode = ENV['STACKPULSE_RUBY_HOOK'].to_s
    return if mode == 'none'
    if (mode.empty? || mode == 'hook') && File.file?(hook_path)
      begin
        require hook_path
        return
      rescue LoadError => e
        # sp-record expected the hook: say why its spans will be missing
        warn "stackpulse: cannot load #{hook_path}: #{e.message}"
      end
    end
    if mode != 'tracepoint'
      begin
        return if c_hook
      rescue StandardError, LoadError, Fiddle::DLError
        nil
      end
    end
    $stackpulse_tracepoint = TracePoint.new(:call, :return) {}
    $stackpulse_tracepoint.enable
  end
end

StackPulseActivate.activate
