"""Asking an OpenAI-compatible endpoint, for every command that does (``judge auto --judge http``,
``synth generate --generator http``): the flags' one reading (:mod:`~harness.endpoint.settings`), the
one client (:mod:`~harness.endpoint.client`: deadline, size cap, retries, key handling), and the one
fan-out (:mod:`~harness.endpoint.fanout`: ``ask_many`` with its reply cache and its tally).

Above the io layer (the reply cache is an :class:`~harness.io.append_log.AppendLog`), below everything
that asks: the judges (:mod:`harness.judging`) and the synthetic sets (:mod:`harness.synth`)."""
