r"""Deprecated (0.2.0): the EULBO model and its settings moved to ``botorch_ext.eulbo``.

``from botorch_ext.models import EULBOModel`` (and the settings classes) still
works for one release, with a ``DeprecationWarning``; import from
``botorch_ext.eulbo`` instead.
"""

from botorch_ext.deprecation import moved_name

#: The names of 0.1.0 and their new module.
MOVED = {
    name: "botorch_ext.eulbo"
    for name in (
        "ELBO_SCALES",
        "AdamOptions",
        "ELBOFitOptions",
        "EULBOModel",
        "EULBOOptions",
        "JointOptions",
        "StoppingOptions",
        "UtilityOptions",
        "WarmStartOptions",
    )
}


def __getattr__(name: str) -> object:
    return moved_name(__name__, name, MOVED)
