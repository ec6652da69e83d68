# SPDX-License-Identifier: MIT
#
# Put first on PYTHONPATH by sp-record for the Python processes it starts.
#
# CPython 3.11 fires its function__entry USDT probe only on the interpreter's
# tracing path (a trace or profile function is set): without one it almost
# never fires. This sets a profile function on every thread. The function is
# the builtin 'slice' (called as slice(frame, event, arg), it builds a small
# object and returns): no Python frame runs per call, so it adds no
# function__return hits of its own, and it cannot fail. The cost is the
# interpreter's tracing path plus one C call per event (docs/spans.md).
# STACKPULSE_PY_HOOK=none disables it (for measurements).
#
# Then the sitecustomize this one shadows (if any) is imported as usual.
import os
import sys


def _stackpulse_activate():
    if os.environ.get("STACKPULSE_PY_HOOK") == "none" or sys.version_info[:2] != (3, 11):
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
    except ImportError:
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_stackpulse_activate()
_stackpulse_chain()
