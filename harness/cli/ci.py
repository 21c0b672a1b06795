"""``harness ci comment FILE.md``: post ``harness check --comment``'s file as the pull request's one
sticky comment (:mod:`harness.ci.github`). Exit 0 when posted, and when it cannot be (outside a pull
request, a fork's read-only token: one line says so); 1 when GitHub kept failing; 2 bad input."""

from __future__ import annotations

import argparse
import os

from harness.cli.command import add_command, usage

#: ``harness ci comment --help``: its line in ``harness --help``, a blank line, its description
ABOUT_COMMENT = """create or update the pull request's sticky comment from FILE.md

FILE.md is what `harness check --comment FILE.md` wrote. Reads GITHUB_API_URL, GITHUB_REPOSITORY,
GITHUB_TOKEN and GITHUB_EVENT_PATH as a GitHub runner sets them; updates the comment that starts
with the marker line, or creates one. Outside a pull request, or on a 403/404 (a fork's read-only
token), one line says the comment was not posted and the exit is 0."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ci", help="CI helpers: post the pull request comment (docs/nightly.md)")
    actions = p.add_subparsers(dest="ci_command", metavar="ACTION")
    c = add_command(actions, "comment", ABOUT_COMMENT)
    c.add_argument("file", metavar="FILE.md", help="the comment harness check --comment wrote")
    c.set_defaults(func=comment)
    p.set_defaults(func=lambda args: usage(p))


def comment(args: argparse.Namespace) -> int:
    from harness.ci.github import post

    posted = post(args.file, os.environ)
    print(posted.line)
    return posted.exit_code
