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
#
# With STACKPULSE_SPANS_MATCH (sp-record --spans-match=GLOB; globs one a
# line) the extension installs no hook for every call: each method whose
# name ("Class#method", "Class.method", as interpreted stacks name it)
# matches a glob gets a TracePoint of the extension's own, enabled on that
# method alone (TracePoint#enable(target:)), so its marks are the hook's and
# the other methods run as without a hook. Methods defined later are looked
# at once, when defined (method_added, singleton_method_added); a class that
# defines its own hook without calling super hides its methods from it.
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

  # --spans-match: TracePoints on the matching methods only.
  module Match
    NAME = Module.instance_method(:to_s)	# a class may redefine its own name
    @globs = []
    @tps = []	# the enabled TracePoints, kept
    @seen = {}	# the methods traced (a redefinition is a new method)

    class << self
      def start(globs)
        @globs = globs
        each_defined { |mod, name, single| added(mod, name, single) }
        Module.prepend(Added)
      end

      def label(mod, name, single)
        "#{NAME.bind_call(mod)}#{single ? '.' : '#'}#{name}"
      end

      def added(mod, name, single)
        label = label(mod, name, single)
        return unless @globs.any? { |g| File.fnmatch?(g, label) }

        trace(single ? mod.singleton_class.instance_method(name) : mod.instance_method(name))
      rescue NameError
        nil
      end

      # Only a method with Ruby code can be a target: C methods and
      # attr_reader have none (enable raises ArgumentError).
      def trace(um)
        return unless um.source_location
        return if @seen[um]

        tp = StackPulseHook.tracepoint
        tp.enable(target: um)
        # its frames open when a recorder comes are rebuilt (hook.c)
        StackPulseHook.traced(RubyVM::InstructionSequence.of(um))
        @seen[um] = true
        @tps << tp
      rescue ArgumentError, RuntimeError
        nil
      end

      # The methods defined before the activator ran (RubyGems').
      def each_defined
        ObjectSpace.each_object(Module) do |mod|
          next if mod.singleton_class?

          (mod.instance_methods(false) + mod.private_instance_methods(false)).each do |n|
            yield mod, n, false
          end
          mod.singleton_methods(false).each { |n| yield mod, n, true }
        end
      end
    end

    # Prepended to Module: each method defined from now on, once.
    module Added
      private

      def method_added(name)
        StackPulseActivate::Match.added(self, name, false)
        super
      end

      def singleton_method_added(name)
        StackPulseActivate::Match.added(self, name, true)
        super
      end
    end
  end

  def self.activate
    mode = ENV['STACKPULSE_RUBY_HOOK'].to_s
    return if mode == 'none'
    globs = ENV['STACKPULSE_SPANS_MATCH'].to_s.split("\n").reject(&:empty?)
    if (mode.empty? || mode == 'hook') && File.file?(hook_path)
      begin
        require hook_path
        Match.start(globs) unless globs.empty?
        return
      rescue LoadError => e
        # sp-record expected the hook: say why its spans will be missing
        warn "stackpulse: cannot load #{hook_path}: #{e.message}"
      end
    end
    # a hook for every call is what --spans-match is there to avoid
    return warn('stackpulse: --spans-match needs the hook (stackpulse_hook.so): no spans') unless globs.empty?

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
