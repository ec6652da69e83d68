# SPDX-License-Identifier: MIT
#
# Loaded by sp-record into the Ruby processes it starts (RUBYOPT=-r<this>).
#
# Ruby 3.1's method__entry/method__return USDT probes fire only while an event
# hook for :call/:return is installed in the process. This installs the
# cheapest one there is: a C function that does nothing, registered with
# rb_add_event_hook() through Fiddle, so no Ruby code runs per call. It falls
# back to an empty TracePoint block (about twice as slow) when Fiddle or the
# symbols are missing. STACKPULSE_RUBY_HOOK=tracepoint forces the fallback,
# =none disables the activator (for measurements).
module StackPulseActivate
  RUBY_EVENT_CALL = 0x0008
  RUBY_EVENT_RETURN = 0x0010

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
    mode = ENV['STACKPULSE_RUBY_HOOK']
    return if mode == 'none'
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
