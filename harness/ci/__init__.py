"""What the harness does inside a CI service, beside the run and the gate: :mod:`harness.ci.github`
posts the one sticky pull request comment ``harness check --comment`` wrote (``harness ci comment``).
"""
