"""The one line printed for an error that is not a :class:`~harness.errors.HarnessError`.

Bad input should never get here: every reader turns it into an ``InputError`` naming the file,
line and field. What does get here is a bug, and it is still printed on one line (a pydantic
``ValidationError`` is several lines with a URL; a ``KeyError`` alone says ``'x'``), named as an
internal error, with the way to see the traceback. An ``ImportError`` that gets here is a package the
extras check found (it looks without importing) that failed when imported: named with the real
error, not as a bug.
"""

from __future__ import annotations

from pydantic import ValidationError

#: Longest message kept from the exception itself.
MAX_MESSAGE = 300


def describe(e: BaseException) -> str:
    """``internal error (KeyError: 'x'); rerun with --debug for the traceback`` on one line; an
    operating-system error (a full disk, a permission) is the system's, named with its file."""
    if isinstance(e, OSError) and e.strerror:
        where = f"{e.filename}: " if e.filename else ""
        return " ".join(f"{where}{e.strerror} (rerun with --debug for the traceback)".split())
    if isinstance(e, ImportError):  # an installed package that does not import is the install's, not a bug
        text = " ".join(f"{type(e).__name__}: {e}".split())[:MAX_MESSAGE]
        return (
            f"a package failed to import ({text}): an installed package is broken or lacks one of its own "
            "dependencies (rerun with --debug for the traceback)"
        )
    if isinstance(e, ValidationError) and e.errors():
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        text = f"{e.title}: {loc + ': ' if loc else ''}{err['msg']}"
    else:
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 3] + "..."
    return f"internal error ({text}); rerun with --debug for the traceback"
