# SPDX-License-Identifier: MIT
#
# Put first on PYTHONPATH by sp-record for the Python processes it starts.
#
# The default: the C extension beside this file, _stackpulse_hook (built for
# CPython 3.11), a profile function that marks each function's start and
# stop with markers of its own, which sp-record records (docs/spans.md).
# sp-record looks for the same file to decide which probes to attach.
#
# Otherwise CPython's own probes are used. CPython 3.11 fires its function__entry USDT probe only on the interpreter's
# tracing path (a trace or profile function is set): without one it almost
# never fires. This sets a profile function on every thread. The function is
# the builtin 'slice' (called as slice(frame, event, arg), it builds a small
# object and returns): no Python frame runs per call, so it adds no
# function__return hits of its own, and it cannot fail. The cost is the
# interpreter's tracing path plus one C call per event (docs/spans.md).
# STACKPULSE_PY_HOOK: unset or "hook" the extension, "slice" the builtin,
# "none" no activator (for measurements).
#
# Then the sitecustomize this one shadows (if any) is imported as usual.
import os
import sys


def _stackpulse_activate():
    mode = os.environ.get("STACKPULSE_PY_HOOK", "")
    if mode == "none" or sys.version_info[:2] != (3, 11):
        return
    if mode in ("", "hook"):
        try:
            import _stackpulse_hook
        except ImportError as e:
            here = os.path.dirname(os.path.abspath(__file__))
            if any(n.startswith("_stackpulse_hook.cpython-%d%d" % sys.version_info[:2])
                   for n in os.listdir(here)):
                # sp-record expected the hook: say why its spans will be missing
                sys.stderr.write("stackpulse: cannot load _stackpulse_hook: %s\n" % e)
        else:
            _stackpulse_hook.install()
            import threading
            threading.setprofile(_stackpulse_hook.thread_start)
            sys.audit("stackpulse.activated", "profile=hook")
            return
    sys.setprofile(slice)
    import threading
    threading.setprofile(slice)
    # Tells sp-record (audit probe) that function entries fire from here on.
    sys.audit("stackpulse.activated", "profile=slice")


def _stackpulse_chain():
    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import sitecustomize  # noqa: F401  the one this file shadows
    except ImportError as e:
        # As site.py does: only "there is none" is quiet; an ImportError
        # the user's own raises goes on to site.py, which prints it as the
        # plain run does ("Error in sitecustomize; ...").
        if e.name != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_stackpulse_activate()
_stackpulse_chain()
