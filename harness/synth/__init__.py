"""``harness synth``: a golden set generated from a corpus, and how far to trust it.

- :mod:`~harness.synth.draw`: which documents (a seeded, stratified draw: length strata, one draw
  per exact- or near-duplicate group);
- :mod:`~harness.synth.prompt`: the versioned prompt and the reading of its ``##query:`` lines;
- :mod:`~harness.synth.generate`: the generators (an OpenAI-compatible endpoint through the client
  of ``judge auto``; ``extract``, a sentence of the document, the biased baseline);
- :mod:`~harness.synth.filters`: the filters, applied and counted;
- :mod:`~harness.synth.folder`: the BEIR folder and ``synth.json``, written whole or not at all;
- :mod:`~harness.synth.bias`: the bias figures (``synth bias``), :mod:`~harness.synth.render` their text.

The package sits above the entry points: the source ranks come from the harness's own BM25 run
(:func:`harness.api.benchmark`), so they are the ranks ``harness run`` gives.
"""
