"""``scope-envs diagnose``: how collapsed is my simulator, before I train against it?

It plays fixed probe states (the game's training-side reference model drives seeded dialogues against a
fixed probe agent; the diagnosed simulator is asked at every user turn of them) and episodes of the
simulator's own, and reports, each with a 95% CI over resampled clusters (``measures``: percentile
bootstrap, or for mode coverage and the entropy ratios the value ± 1.96 SE):

* **sharpening**: the maximum-likelihood exponent ``s`` of ``pi ∝ ref^s`` for its answers, with fit
  quality (KL to the fitted and to the unsharpened reference). Exact when the simulator states its
  distribution (``Simulator.distribution``), from sampled answers otherwise (an LLM, an ``act``-only class,
  or ``--sampled``); the report says which (``fit``). For p4g with the real data, also against the real
  persuadees' replies given the persuader's act;
* **mode coverage**: the share of the reference's reply modes (acts; act paths over an episode) the
  simulator ever produces, and the entropy ratios;
* **persona sensitivity**: how much its answer moves with the dealt card, beside the reference's;
* **cooperation bias**: its conceding rate (giving, disclosing, agreeing) minus the reference's; for p4g
  with the data, against the real persuadees at the real histories;
* for p4g with the data, the **log-likelihood of the real replies** given the real histories.

From Python::

    from scope_envs.diagnose import diagnose, write
    report = diagnose("p4g", "sharpened:3", probe_episodes=10, episodes=40, bootstrap=50)
    print(round(report["sharpening"]["value"], 2))   # 3.0: a sharpened reference is diagnosed as such
    write(report, "runs/diagnose-p4g")                # diagnose.json, diagnose.md, diagnose.png

On the command line: ``scope-envs diagnose --game p4g --simulator frozen --out runs/d``. The definitions,
their assumptions and how each is fitted: ``docs/diagnose.md``.
"""

from scope_envs.diagnose.command import add_parser
from scope_envs.diagnose.specs import SpecError, names, resolve

__all__ = ["DataError", "DiagnoseError", "SpecError", "add_parser", "diagnose", "names", "resolve", "write"]


def __getattr__(name):  # the measuring half (scipy, matplotlib) loads on first use, not with the command line
    if name in ("diagnose", "DiagnoseError", "DataError"):
        from scope_envs.diagnose import diagnosis

        return getattr(diagnosis, name)
    if name == "write":
        from scope_envs.diagnose.report import write

        return write
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
