"""INTERIM scripted users for the text surface (issue 7 replaces them with proper simulators).

A ``ScriptedUser`` is a text player (``plays_text``) that knows only its task's
``user_scenario`` (DESIGN.md §4.2, read from ``view.private``): it states its
reason for calling, answers identity questions with its known info, agrees when
asked to confirm, carries out phone instructions with the telecom user tools,
and ends with ``###STOP###`` (``###TRANSFER###`` when the agent hands it to a
human). It is keyword-driven and far from a realistic customer; it exists so
that ``tau2-frozen``/``vs``/``rotation``/``heldout`` run out of the box. Pass
``user=`` (e.g. an LLM player) to ``frozen``/``vs`` for a real one.

Styles: ``plain`` (the frozen default), ``terse``, ``forthcoming`` (gives its
known info up front), ``impatient`` (gives up sooner) — the rotation members —
and ``chatty`` (held-out only, played on the tasks of the ``test`` split).
"""

from __future__ import annotations

import json

import numpy as np

from scope_envs.agents.base import Simulator, View

STYLES = ("plain", "terse", "forthcoming", "impatient", "chatty")
IDENTITY = ("user id", "email", "name", "zip", "phone", "reservation", "order", "confirmation", "account",
            "date of birth", "verify", "identify", "authenticate")
CONFIRM = ("confirm", "proceed", "yes/no", "would you like", "shall i", "should i", "go ahead", "do you want")
DONE = ("successfully", "has been", "is now", "all set", "completed", "done")
# phone instructions -> telecom user tool calls (first match wins)
PHONE = (
    (("airplane",), "toggle_airplane_mode", {}), (("restart", "reboot"), "reboot_device", {}),
    (("reset", "apn"), "reset_apn_settings", {}), (("sim",), "reseat_sim_card", {}),
    (("data saver",), "toggle_data_saver_mode", {}), (("wi-fi calling", "wifi calling"), "toggle_wifi_calling", {}),
    (("roaming",), "toggle_roaming", {}), (("vpn",), "disconnect_vpn", {}),
    (("network mode", "preferred network"), "set_network_mode_preference", {"mode": "4g_5g_preferred"}),
    (("storage permission",), "grant_app_permission", {"app_name": "messaging", "permission": "storage"}),
    (("sms permission",), "grant_app_permission", {"app_name": "messaging", "permission": "sms"}),
    (("mobile data", "cellular data"), "toggle_data", {}), (("make the payment", "pay the bill", "payment request"),
                                                            "make_payment", {}),
    (("speed test",), "run_speed_test", {}), (("mms", "picture message"), "can_send_mms", {}),
    (("status bar",), "check_status_bar", {}),
)


def _scenario(view: View) -> dict:
    sc = (view.private or {}).get("user_scenario") or {}
    ins = sc.get("instructions")
    if isinstance(ins, dict):
        return {k: str(v).strip() for k, v in ins.items() if v}
    return {"reason_for_call": str(ins or "I need help with my account.").strip()}


class ScriptedUser(Simulator):
    plays_text = True

    def __init__(self, style: str = "plain", patience: int | None = None):
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.style = style
        self.patience = patience if patience is not None else {"impatient": 4, "terse": 6}.get(style, 10)
        self.name = f"tau2-scripted-{style}"

    def _candidates(self, view: View) -> list[str]:
        """Plausible next messages, most likely first."""
        sc = _scenario(view)
        known = sc.get("known_info", "")
        reason = sc.get("reason_for_call", "I need some help.")
        mine = [t for t in view.history if t.role == view.role]
        last = view.history[-1] if view.history else None
        if last is not None and last.role == view.role and getattr(last, "call", None) is not None:
            result = (getattr(last, "result", "") or "").splitlines()
            return [f"Okay, I did that. My phone says: {result[0] if result else 'nothing'}",
                    "Done. What should I do next?"]
        said = [t for t in view.history if t.role != view.role and getattr(t, "call", None) is None]
        agent = said[-1].text.lower() if said else ""
        if len([t for t in mine if getattr(t, "call", None) is None]) >= self.patience:
            return ["Thanks, that's all for today. ###STOP###"]
        if "transfer" in agent and ("human" in agent or "agent" in agent):
            return ["###TRANSFER###"]
        if not mine:
            opening = reason if self.style != "forthcoming" else f"{reason} {known}"
            if self.style == "terse":
                opening = opening.split(".")[0] + "."
            if self.style == "chatty":
                opening = f"Hi there, hope you're having a good day! {opening}"
            return [opening, f"Hello. {reason}"]
        if any(k in agent for k in DONE) and "?" not in agent:
            return ["Great, thank you! That's all I needed. ###STOP###", "Thanks. ###STOP###"]
        if any(k in agent for k in IDENTITY) and known and "?" in agent:
            return [known, f"Sure. {known}"]
        if view.public.get("domain") == "telecom" or "phone" in agent:
            for words, tool, args in PHONE:
                if any(w in agent for w in words) and any(v in agent for v in ("please", "can you", "could you",
                                                                               "try", "let's", "check")):
                    return [json.dumps({"name": tool, "arguments": args}), "Okay, one moment."]
        if any(k in agent for k in CONFIRM):
            return ["Yes, please go ahead.", "Yes."]
        if any(k in agent for k in DONE):
            return ["Great, thank you! That's all I needed. ###STOP###", "Thanks. ###STOP###"]
        if "anything else" in agent:
            return ["No, that's all. ###STOP###"]
        return [f"As I said, {reason[0].lower() + reason[1:]}" if reason else "Can you help me?",
                "Could you help me with that, please?"]

    def reply(self, view: View, rng: np.random.Generator) -> str:
        return self._candidates(view)[0]

    def verbalize(self, view: View, k: int, rng: np.random.Generator, tail: float | None = None):
        """The candidates with stated probabilities (the first most likely), for verbalized sampling."""
        cands = self._candidates(view)[:k]
        weights = np.array([0.7 ** i for i in range(len(cands))])
        weights /= weights.sum()
        if tail is not None:
            weights = np.minimum(weights, tail)
        return [(c, float(p)) for c, p in zip(cands, weights)]


def rotation_members() -> list[ScriptedUser]:
    return [ScriptedUser("terse"), ScriptedUser("forthcoming"), ScriptedUser("impatient")]
