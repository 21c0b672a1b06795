"""How a subcommand module adds its parser: ``add_command(sub, "name", ABOUT)``."""

from __future__ import annotations

import argparse
from typing import Any


def add_command(sub: argparse._SubParsersAction, name: str, about: str) -> argparse.ArgumentParser:
    """A subcommand parser. ``about`` is the line ``harness --help`` shows for it, a blank line, then
    its description (line breaks in it are only for the source: argparse re-wraps the text)."""
    summary, _, details = about.partition("\n\n")
    return sub.add_parser(name, help=summary, description=" ".join(details.split()) or None)


def require_extras(*needs: Any) -> None:
    """Exit 2 before any work when a command's extras are missing (``harness.extras.Need`` each): one
    line per missing extra, with the pip command."""
    from harness import extras
    from harness.errors import InputError

    missing = extras.unmet(needs)
    if missing:
        raise InputError(extras.message(missing))


def add_allow_incomplete(p: argparse.ArgumentParser) -> None:
    """``--allow-incomplete``, the same words on every command that reads a results folder."""
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="read a results folder that is incomplete (interrupted run) or whose run files changed after the run "
        "(a warning each instead of exit 2)",
    )


def gate_tolerances(args: argparse.Namespace) -> Any:
    """The gate's :class:`~harness.gate.Tolerances` from ``harness check``'s flags (a tolerances file,
    ``--tolerance``), with ``--alpha`` and ``--permutations`` checked: one reading for a results folder
    and for a suite."""
    from harness.errors import InputError
    from harness.gate import Tolerances
    from harness.gate.tolerances import check_alpha, check_tolerance

    tol = Tolerances.load(args.tolerances) if args.tolerances else Tolerances()
    if args.tolerance is not None:
        tol = tol.model_copy(update={"default": check_tolerance(args.tolerance, "--tolerance")})
    if args.alpha is not None:
        check_alpha(args.alpha, "--alpha")
    if args.permutations < 1:
        raise InputError("--permutations must be >= 1")
    return tol


def gate_power_options(args: argparse.Namespace, tol: Any = None) -> dict[str, Any]:
    """``harness check``'s ``--non-inferiority``, ``--ni-alpha`` and ``--require-power``, checked before
    anything is read, as keyword arguments of :func:`harness.gate.check` (a folder and a suite alike).
    ``tol``: the :func:`gate_tolerances`, whose alpha ``--require-power`` must exceed."""
    from harness.errors import InputError
    from harness.gate.tolerances import DEFAULT_ALPHA, check_alpha, check_tolerance

    margin = getattr(args, "non_inferiority", None)
    if margin is not None:
        margin = check_tolerance(margin, "--non-inferiority")
    ni_alpha = check_alpha(getattr(args, "ni_alpha", DEFAULT_ALPHA), "--ni-alpha")
    power = getattr(args, "require_power", None)
    if power is not None:
        check_alpha(power, "--require-power")
        alpha = args.alpha if getattr(args, "alpha", None) is not None else getattr(tol, "alpha", None)
        alpha = DEFAULT_ALPHA if alpha is None else alpha
        if not power > alpha:
            raise InputError(f"must be above the check's alpha ({alpha:g}), got {power:g}", field="--require-power")
    return {"non_inferiority": margin, "ni_alpha": ni_alpha, "power": power if power is not None else 0.8}


def serve_until_interrupted(server: Any) -> None:
    """Serve ``server`` (a ``socketserver`` server) until Ctrl-C, then close its socket: the page
    commands (``judge serve``, ``report --serve``) stop the same quiet way, without a traceback."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
