"""``harness export DIR --to FORMAT --out OUT``: a results folder (or a suite folder) in the formats
other tools read, so the figures leave the terminal: github-action-benchmark's JSON
(:mod:`~harness.export.github_benchmark`), MTEB's results layout (:mod:`~harness.export.mteb`), run
files annotated with ir_metadata (:mod:`~harness.export.ir_metadata`) and ranx's JSON run and qrels
(:mod:`~harness.export.ranx`). :mod:`~harness.export.source` reads the folder whole (the integrity
check of every command); :mod:`~harness.export.command` writes the files and says which.
"""
