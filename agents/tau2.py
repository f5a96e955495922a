"""Built-in tau2 players (act-level; on the text surface ``text_game.py`` renders their acts and reads the agent).

* ``ReferenceUser``: the training-side reference user model (``behaviour.py``)
  playing the dealt card (or ``style``), sharpened by ``sharpening``; ``cooperation``
  in [0, 1] moves its cooperative traits that fraction of the way toward the
  collapsed user's modal card (0, the default: the card as it is). Its cards need different agent moves: a
  reserved one is asked for what a modal one volunteers, a reluctant one asked again after it declines
  (``behaviour.py``).
* ``CollapsedUser``: "one frozen aligned LLM playing the customer": the modal
  ``default`` card — discloses everything in its first message, never insists,
  always complies, never changes its mind, never slips, endlessly patient —
  sharpened by ``sharpening = 3``. Its verbalized top-k reports the unsharpened
  reference (verbalized sampling recovers the reference's spread).
* ``HumanProxyUser``: the held-out population (``human_proxy.py``), playing the
  held-out card the episode deals. Evaluation only.
* ``OracleAgent``: a scripted agent that knows the task's gold calls and plays
  them through the act surface alone (``scope-envs validate tau2``:
  ``oracle_act_pass_rate``). ``oracle_text`` / ``OracleTextAgent``: the same
  oracle on the text surface (gold calls as JSON, requests in plain words).
"""

from __future__ import annotations

import json

import numpy as np

from scope_envs.agents.base import SharpenedReference
from scope_envs.core import seal
from scope_envs.core.deprecation import sharpening_of
from scope_envs.core.game import Persona
from scope_envs.core.simulator import Simulator, View
from scope_envs.games.tau2 import behaviour, human_proxy
from scope_envs.games.tau2.dialogue_acts import AGENT_INDEX, USER_ACTS
from scope_envs.games.tau2.goals import TRANSFER
from scope_envs.games.tau2.realize import SLOT_WORDS, arg_words


COOPERATIVE_TRAITS = ("disclose", "patience", "insist", "comply", "mind_change", "slip")  # not ``verbose``


def cooperative_traits(traits: dict, cooperation: float) -> dict:
    """``traits`` moved ``cooperation`` of the way toward the modal (fully cooperative) card's values."""
    if not cooperation:
        return traits
    mode = behaviour.default_card().traits
    return {t: (v + cooperation * (mode[t] - v) if t in COOPERATIVE_TRAITS else v) for t, v in traits.items()}


class ReferenceUser(SharpenedReference):
    """The reference user on the dealt task; ``style`` (a card) fixes its behaviour, else the dealt card's."""

    batched_reference = "tau2"  # the batched engine computes this reference for all slots (vec/games.py)

    def __init__(self, sharpening: float | None = None, style: Persona | None = None, calibration_noise: float = 0.25,
                 name: str = "reference", *, cooperation: float = 0.0, gamma: float | None = None):
        if not 0.0 <= cooperation <= 1.0:
            raise ValueError(f"cooperation must be in [0, 1] for a tau2 user, got {cooperation}")
        # persona None: the env deals the task
        super().__init__(sharpening_of(sharpening, gamma, 1.0), None, calibration_noise, name, cooperation=cooperation)
        self.style = style

    def reference(self, view: View) -> np.ndarray:
        traits = self.style.traits if self.style is not None else view.persona.traits
        if self.cooperation:
            traits = cooperative_traits(traits, self.cooperation)
        return behaviour.reference_distribution(traits, view.private["state"], view.legal)


class CollapsedUser(ReferenceUser):
    def __init__(self, sharpening: float | None = None, style: Persona | None = None, calibration_noise: float = 0.25,
                 name: str = "collapsed", *, cooperation: float = 0.0, gamma: float | None = None):
        super().__init__(sharpening_of(sharpening, gamma, 3.0), style or behaviour.default_card(), calibration_noise,
                         name, cooperation=cooperation)


class HumanProxyUser(Simulator):
    """The held-out customer (evaluation only); ``assumptions``: see ``games.tau2.human_proxy.Assumptions``."""

    name = "human_proxy"
    persona = None

    def __init__(self, assumptions=None):
        seal.check("HumanProxyUser (the held-out human proxies)")
        self.assumptions = human_proxy.assumptions_from(assumptions)

    def distribution(self, view: View) -> np.ndarray:
        return human_proxy.distribution(view.persona.traits, view.private["state"], view.legal, self.assumptions)


def rotation_members() -> list[CollapsedUser]:
    """Several distinct collapsed styles: the modal card and three train cards, at different sharpness."""
    cards = [behaviour.default_card(), *(behaviour.card("train", i) for i in (5, 50, 500))]
    return [CollapsedUser(g, c, name=f"collapsed-{c.id}-g{g:g}") for c, g in zip(cards, (3.0, 2.0, 4.0, 6.0))]


def oracle_act(game) -> int:
    """The oracle's next agent act on a ``Tau2ActGame``: the task's gold calls, in order, through the acts."""
    g, c = game.goal, game.candidates()
    legal = game.legal("agent")
    last_user = USER_ACTS[game.last["user"]]

    def find(kind, call):
        keys = [x.key() for x in c[kind]]
        return keys.index(call.key()) if call.key() in keys else None

    if game.history and game.history[-1].role == "agent" and game.history[-1].error and game.history[-1].call \
            and game.history[-1].call["name"] in ("get_user_details", "find_user_id_by_email",
                                                  "find_user_id_by_name_zip", "get_customer_by_phone"):
        slot = next(iter(game.told), None)  # a failed identity lookup: ask again
        if slot is not None and game.told.get(slot) == "slip":
            return AGENT_INDEX[f"request:{slot}"]
    if not game.told and g.identity and last_user != "inform_identity":
        return AGENT_INDEX[f"request:{next(iter(g.identity))}"]
    if not game.stated and (g.requests or g.phone_actions or g.decoy_kind) and game.user_msgs < 6:
        return AGENT_INDEX["request:details"]
    if game.decoy_stated and not game.decoy_retracted and g.decoy_kind == "forbidden" and not game.denied:
        return AGENT_INDEX["deny"]
    for call in g.calls:
        if call.key() in game.done:
            continue
        if call.name == TRANSFER:
            return AGENT_INDEX["transfer"]
        if call.kind == "phone":
            j = find("phone", call)
            if j is not None:
                return AGENT_INDEX[f"instruct:{j}"]
            return AGENT_INDEX["request:details"]
        if call.kind == "write":
            j = find("write", call)
            if j is None:
                if c["read"]:  # look up what the user's records reveal first
                    return AGENT_INDEX["lookup:0"]
                return AGENT_INDEX["request:details"] if not game.details_given else AGENT_INDEX["request:record_id"]
            # a candidate ahead of it that is not gold (a decoy): ask to confirm that one, which retracts it
            for jj, other in enumerate(c["write"][:j]):
                if g.decoy_kind == "mind_change" and other.key() == g.decoy.key():
                    return AGENT_INDEX[f"confirm:{jj}"]
            if call.key() not in game.confirmed:
                return AGENT_INDEX[f"confirm:{j}"]
            return AGENT_INDEX[f"execute:{j}"]
        j = find("read", call)
        if j is not None:
            return AGENT_INDEX[f"lookup:{j}"]
        if not game.details_given and g.details:
            return AGENT_INDEX["request:details"]
        if c["read"]:
            return AGENT_INDEX["lookup:0"]
        continue  # a lookup that cannot be grounded: skip it
    if g.decoy is not None and game.decoy_stated and not game.decoy_retracted and g.decoy_kind == "mind_change":
        j = find("write", g.decoy)
        if j is not None:
            return AGENT_INDEX[f"confirm:{j}"]
    if g.questions and not game.answered:
        return AGENT_INDEX["answer"]
    return AGENT_INDEX["end"] if legal[AGENT_INDEX["end"]] else int(np.flatnonzero(legal)[0])


class OracleAgent(Simulator):
    """Knows the task's gold calls (reads them from ``game``); plays them with agent acts only."""

    name = "oracle"

    def __init__(self, game):
        self.game = game

    def distribution(self, view: View) -> np.ndarray:
        p = np.zeros(len(view.legal))
        p[oracle_act(self.game)] = 1.0
        return p


def _words(call) -> str:
    args = arg_words(call.arguments)
    return call.name.replace("_", " ") + (f" ({args})" if args else "")


def oracle_text(game) -> str:
    """The oracle's next turn on the text surface (a ``Tau2TextGame``): the task's gold calls replayed as
    JSON, confirmations, phone instructions and answers asked for in plain words, then ``###STOP###``."""
    g = game.goal
    said = [t.text for t in game.history if t.role == "agent" and t.call is None]
    tried = {json.dumps([t.call["name"], t.call["arguments"]], sort_keys=True)
             for t in game.history if t.role == "agent" and t.call is not None}
    if not said:
        return "Hello! How can I help you today?"
    if g.identity and not game.told:
        ask = f"Could you please give me {SLOT_WORDS[next(iter(g.identity))]}?"
        if said.count(ask) < 2:
            return ask
    if game.decoy_stated and not game.decoy_retracted and g.decoy_kind == "forbidden" and not game.denied:
        return f"I'm sorry, but our policy does not allow me to {_words(g.decoy)}."
    for call in g.calls:
        if call.key() in game.done or json.dumps([call.name, call.arguments], sort_keys=True) in tried:
            continue
        if call.kind == "phone":
            say = f"Please {_words(call)} on your phone and tell me what you see."
            if said.count(say) < 3:
                return say
            continue
        if call.kind == "write":
            ask = f"To confirm: I will {_words(call)}. Shall I proceed (yes/no)?"
            if ask not in said:
                return ask
        return json.dumps({"name": call.name, "arguments": call.arguments})
    if g.questions and not game.answered:
        return "Here is what I found: " + "; ".join(g.questions) + "."
    if game.transfer_pending:
        return "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
    last = "Is there anything else I can help you with?"
    return last if last not in said else "Thank you for contacting us. Goodbye! ###STOP###"


class OracleTextAgent:
    """``oracle_text`` as a text policy: ``agent(obs, infos) -> str`` for a text-surface env's ``agent_0``."""

    def __init__(self, env):
        self.game = env.unwrapped.game

    def __call__(self, obs=None, infos=None) -> str:
        return oracle_text(self.game)
