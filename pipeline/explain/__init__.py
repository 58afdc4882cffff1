"""``warcplex explain``: the page as the pipeline saw it, in a browser.

A page is run through the same steps with the same configuration as ``warcplex run``
(:mod:`~pipeline.explain.trace`: the one loop, with a trace of what the cascade and the block stage did),
and written as one self-contained HTML file (:mod:`~pipeline.explain.render`): the page as rendered with
every text block outlined by its label (:mod:`~pipeline.explain.view`), the text with each line kept or
dropped and the rule that decided (:mod:`~pipeline.explain.verdicts`), and the path through the cascade.
:mod:`~pipeline.explain.select` chooses the pages (a URL, a record id, a sample by outcome), and
:mod:`~pipeline.explain.sample` writes a few pages per outcome with a run (``--explain-sample``).
"""
