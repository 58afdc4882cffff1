"""The block features' columns, declared once: the table the compiled features write by (``features.pxi`` looks each
column up here by name), the classifier reads (``pipeline.steps.blocks``) and ``scripts/train_blocks.py`` fits on.

A feature is a row of :data:`DENSE` (or of a group it expands into); adding one is a row here and the line of
``features.pxi`` that computes it under its name. The order of the rows is the order of the matrix's columns, and a
model stores the names it was fitted with (``dense_names`` in blocks_model.json), so a model fitted on another
table is refused rather than misread.
"""

from __future__ import annotations

# Bin edges of the one-hot groups (np.digitize's: a value goes to the number of edges at or below it).
WORD_BINS = (2, 3, 5, 8, 13, 21, 40, 80)  # the block's words
LINK_BINS = (0.01, 0.3, 0.6, 0.9)  # its link density
PPL_BINS = (-0.7, -0.3, 0.0, 0.3, 0.7, 1.2)  # log10 perplexity relative to the language model's typical block

# name -> what the column holds, per group, in column order.
BASE = {  # the block's own features
    "log_words": "log1p of its words (word_count)",
    "link_density": "characters inside links over characters",
    "in_primary": "1 where its text is inside resiliparse's main-content text of the page",
    "ends_punct": "1 where its text ends a sentence (ENDS_SENTENCE)",
    "comma_rate": "commas and full stops per word (at most 1)",
    "digit_share": "ASCII digits over characters",
    "title_share": "words starting with a capital over words",
    "log_ppl": "log10 KenLM perplexity of its first LM_CHARS characters, less the model's centre (0: unscored)",
    "no_ppl": "1 where it is unscored (under three words, or no model for the page's language)",
    "depth": "block-level depth, at most 30, over 30",
    "letter_share": "letters over characters",
    "space_share": "word gaps over characters",
    "heading": "1 for h1-h6",
    "list_item": "1 for li, dt, dd",
    "cell": "1 for td, th",
    "code": "1 for pre or code, or inside a pre",
}
PAGE = {  # where the block stands on its page
    "position": "its index over the page's last index",
    "ppl_vs_page": "log_ppl less the page's median (0: unscored)",
    "ppl_rank": "percentile rank of log_ppl among the page's scored blocks (0.5: unscored)",
    "page_in_primary": "the page's mean of in_primary",
    "log_page_blocks": "log1p of the page's blocks, over 8",
    "words_rank": "percentile rank of its words on the page",
    "word_share": "its words over the page's",
    "log_siblings": "log1p of its siblings of the same tag under the same parent",
    "log_repeats": "log1p of the other blocks of its signature (tag, enclosing tags, class/id words)",
    "repeat_word_share": "its signature's words over the page's",
    "repeat_link_density": "its signature's link density (word-weighted)",
    "page_repeat_share": "the page's words in signatures of three blocks or more, over its words",
    "page_lm": "1 where the page's language has a pinned model",
}
NEIGHBOUR = ("log_words", "link_density", "in_primary", "ends_punct")  # read of the neighbours and the window
SHIFTS = (("prev1", -1), ("prev2", -2), ("next1", 1), ("next2", 2))
WINDOW = 3  # the window's half width (7 blocks)
# Where the block lies: in a comment region, and in each main-content candidate of the structure heuristics of seeds
# 003 and 004 (pipeline.steps.blocks.parse.Nodes). Only a model fitted with them reads them
# (``scripts/train_blocks.py --seed-features``), last.
NODES = {
    "comment_region": "1 inside an element whose class or id names comments",
    "mce_children": "1 inside seed 003's element with the most text-bearing children",
    "mce_leaf_parent": "1 inside seed 003's parent of the longest childless text",
    "mce_middle": "1 inside seed 003's candidate nearest the middle depth",
    "article_node": "1 inside seed 004's article node",
    "list_items": "1 inside one of seed 004's list items",
}


def dense_names(nodes: bool = False) -> list[str]:
    """The dense features' names, in column order; with ``nodes``, :data:`NODES` last."""
    names = ["bias", *BASE, *PAGE]
    names += [f"words_bin{i}" for i in range(len(WORD_BINS) + 1)]
    names += [f"link_bin{i}" for i in range(len(LINK_BINS) + 1)]
    names += [f"ppl_bin{i}" for i in range(len(PPL_BINS) + 1)]
    names += [f"{side}.{n}" for side, _ in SHIFTS for n in NEIGHBOUR]
    names += [f"win.{n}" for n in NEIGHBOUR]
    return names + list(NODES) if nodes else names


COLUMN = {name: j for j, name in enumerate(dense_names(nodes=True))}  # name -> its column

# The second stage's features (the context of each block's first-stage probability), then its BASE features and
# position (CONTEXT_BASE of the dense matrix).
CONTEXT = ("prob", "logit", "prev1", "next1", "prev2", "next2", "prev3", "next3", "mean7", "mean21", "page_mean",
           "page_max", "page_kept_share", "max_before", "max_after", "log_kept_words", "kept_words_before")
CONTEXT_BASE = (COLUMN["log_words"], COLUMN["position"] + 1)  # the dense columns it copies: [start, stop)


def context_names() -> list[str]:
    """The second stage's features' names, in column order."""
    return [*CONTEXT, *dense_names()[CONTEXT_BASE[0]:CONTEXT_BASE[1]]]
