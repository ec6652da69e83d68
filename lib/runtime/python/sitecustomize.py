# SPDX-License-Identifier: MIT
#
# Put first on PYTHONPATH by sp-record for the Python processes it starts.
#
# CPython 3.11 runs a Python-to-Python call inside the caller's evaluation
# loop ("inlined" calls), and its function__entry USDT probe only fires when
# the loop is entered: almost never. A frame evaluation function (PEP 523)
# turns the inlining off; installing the default evaluator itself as that
# function keeps the behaviour and makes every call enter the loop, so
# function__entry and function__return pair up for each call. No Python code
# runs per call. STACKPULSE_PY_HOOK=none disables it (for measurements).
#
# Then the sitecustomize this one shadows (if any) is imported as usual.
import os
import sys


def _stackpulse_activate():
    if sys.version_info[:2] != (3, 11) or os.environ.get("STACKPULSE_PY_HOOK") == "none":
        return
    try:
        import ctypes
        api = ctypes.pythonapi
        api.PyInterpreterState_Get.restype = ctypes.c_void_p
        setf = api._PyInterpreterState_SetEvalFrameFunc
        setf.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        setf.restype = None
        default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
        setf(api.PyInterpreterState_Get(), default)
    except (ImportError, AttributeError, OSError):
        pass


def _stackpulse_chain():
    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import sitecustomize  # noqa: F401  the shadowed one
    except ImportError:
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_stackpulse_activate()
_stackpulse_chain()
