"""A task's structured user goal, derived automatically from the task (never written per task).

``goal_for(data, task)`` reads a tau^2-bench task and returns a ``Goal``:

* **calls**: the task's gold calls in order (``Call``: name, arguments,
  requestor, kind ``read``/``write``/``generic``/``phone``). Writes (and the
  agent-side ``transfer_to_human_agents``) are the user's *requests*; telecom's
  user-side calls are the *phone actions* the agent must talk the user through.
* **identity**: the identity slots the user can give (``user_id``, ``email``,
  ``name_zip``, ``phone``), from the values the gold calls need that no earlier
  tool result reveals, and from the ``known_info`` text (regexes for ids,
  emails, zips, phone numbers, "You are First Last").
* **details**: the other argument values the user must supply (dates, addresses,
  a reservation number it knows, ...). They are found by *simulating* the gold
  run: a value a gold call needs counts as revealed by the records when an
  earlier gold (or identity) read returned it; otherwise the user has to say it.
* **questions**: the task's ``communicate_info`` strings (what the user wants to
  be told).
* **decoy**: a write the user may ask for that the task's gold does not make:
  ``forbidden`` when the instructions name a record (a reservation, an order)
  that no gold write touches and ask to cancel it — the user wants it, the policy
  forbids it — else ``mind_change``: a cancellation of another of the user's
  records, which a mind-changing user first asks for and later retracts.
  Executing a decoy changes the database away from the gold one (reward 0).

Derived values are grounded in the task text and the database only, so the
derivation is the same for the embedded data and the real tau^2-bench files.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

from scope_envs.games.tau2.dialogue_acts import typo
from scope_envs.games.tau2.tools import READ, WRITE
from scope_envs.games.tau2.world import World

# tool argument name -> the identity slot that supplies it
IDENTITY_ARGS = {"user_id": "user_id", "email": "email", "zip": "name_zip", "first_name": "name_zip",
                 "last_name": "name_zip", "phone_number": "phone", "full_name": "name_zip", "dob": "name_zip"}
# identity slot -> (read tool, how its arguments are built from the slot's values) per domain
IDENTITY_READS = {
    "user_id": ("get_user_details", lambda v: {"user_id": v["user_id"]}),
    "email": ("find_user_id_by_email", lambda v: {"email": v["email"]}),
    "name_zip": ("find_user_id_by_name_zip",
                 lambda v: {"first_name": v["first_name"], "last_name": v["last_name"], "zip": v["zip"]}),
    "phone": ("get_customer_by_phone", lambda v: {"phone_number": v["phone_number"]}),
}
RECORD_READS = {"reservation_id": "get_reservation_details", "order_id": "get_order_details",
                "product_id": "get_product_details"}
TRANSFER = "transfer_to_human_agents"


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict
    requestor: str  # assistant | user
    kind: str  # read | write | generic | phone

    def key(self) -> str:
        # asked several times per step (legal acts, candidates): computed once per call (arguments are not mutated)
        key = self.__dict__.get("_key")
        if key is None:
            key = json.dumps([self.name, self.arguments, self.requestor], sort_keys=True)
            object.__setattr__(self, "_key", key)
        return key

    def grounding(self) -> tuple[str, ...]:
        """The lower-cased ``tokens`` of the arguments: the call is grounded once each occurs in what was revealed
        (memoized as ``key`` is: the candidates ask for it at every step)."""
        low = self.__dict__.get("_grounding")
        if low is None:
            low = tuple(str(v).lower() for v in tokens(self.arguments))
            object.__setattr__(self, "_grounding", low)
        return low


@dataclass
class Goal:
    domain: str
    task_id: str
    calls: list[Call]
    identity: dict[str, dict[str, str]]  # slot -> {argument name: value}
    details: dict[str, str]  # argument name -> value, the values only the user knows
    record_ids: dict[str, str] = field(default_factory=dict)  # ids named in the instructions: value -> arg name
    questions: list[str] = field(default_factory=list)
    decoy: Call | None = None
    decoy_kind: str | None = None  # "forbidden" | "mind_change"

    # The views below are derived from ``calls`` once, on first use: a goal is shared by every episode of its task
    # (``goal_for`` caches it) and read at every step; nothing changes ``calls`` after ``derive`` builds it.
    # The lists are shared: read them, never mutate them.
    @functools.cached_property
    def requests(self) -> list[Call]:
        return [c for c in self.calls if c.kind == "write" or (c.kind == "generic" and c.name == TRANSFER)]

    @functools.cached_property
    def phone_actions(self) -> list[Call]:
        return [c for c in self.calls if c.kind == "phone"]

    @functools.cached_property
    def lookups(self) -> list[Call]:
        return [c for c in self.calls if c.kind in ("read", "generic") and c.name != TRANSFER]

    @functools.cached_property
    def real_requests(self) -> tuple[Call, ...]:
        """The requests less the transfer to a human agent (the writes the user wants made)."""
        return tuple(c for c in self.requests if c.name != TRANSFER)

    def mistypable(self, slot: str) -> bool:
        """Whether ``slot``'s values hold a digit (a slip is a typo on a digit: only then does the user slip)."""
        return any(ch.isdigit() for v in self.identity.get(slot, {}).values() for ch in str(v))

    @functools.cached_property
    def slippable(self) -> bool:
        """Whether some identity slot is ``mistypable``."""
        return any(self.mistypable(slot) for slot in self.identity)

    def told_values(self, slot: str, how: str) -> dict:
        """``slot``'s identity values as the user tells them: as they are, or (``how == "slip"``) with every
        value that holds a digit mistyped (``typo``)."""
        vals = dict(self.identity.get(slot, {}))
        if how == "slip":
            vals = {k: typo(str(v)) if any(ch.isdigit() for ch in str(v)) else v for k, v in vals.items()}
        return vals

    def told_piece(self, slot: str, how: str) -> str:
        """What telling ``slot`` (``how``) reveals to the agent: its values as told, lower-cased, in one text."""
        return " ".join(str(v).lower() for v in self.told_values(slot, how).values())

    @functools.cached_property
    def details_piece(self) -> str:
        """What giving the details reveals to the agent."""
        return " ".join(str(v).lower() for v in self.details.values())

    def identity_read(self, slot: str, how: str) -> Call | None:
        """The identity read (``IDENTITY_READS``) built from ``slot``'s values as the user told them (``how``:
        ``"ok"``, or ``"slip"``: digits mistyped); None when the slot lacks a value the read needs. One ``Call``
        per (slot, how), so that its memoized key and grounding serve every episode."""
        cache = self.__dict__.setdefault("_identity_reads", {})
        call = cache.get((slot, how), cache)
        if call is cache:
            tool, build = IDENTITY_READS[slot]
            try:
                call = Call(tool, build(self.told_values(slot, how)), "assistant", "read")
            except KeyError:
                call = None
            cache[(slot, how)] = call
        return call

    @functools.cached_property
    def transfer_call(self) -> Call:
        """The call the agent's ``transfer`` act makes: the task's own transfer request's arguments, else a
        generic summary."""
        transfer = next((r for r in self.requests if r.name == TRANSFER), None)
        args = transfer.arguments if transfer else {"summary": "The customer needs further help."}
        return Call(TRANSFER, args, "assistant", "generic")

    @functools.cached_property
    def record_reads(self) -> tuple[Call, ...]:
        """The record reads (``RECORD_READS``) of the ids named in the instructions, in ``record_ids`` order."""
        return tuple(Call(RECORD_READS[arg], {arg: value}, "assistant", "read")
                     for value, arg in self.record_ids.items() if RECORD_READS.get(arg) is not None)


def instruction_text(task: dict) -> str:
    sc = task.get("user_scenario") or {}
    ins = sc.get("instructions")
    if isinstance(ins, dict):
        return "\n".join(str(v) for k, v in ins.items() if v and k != "domain")
    return str(ins or "")


_NEEDS_GROUNDING = re.compile(r"[\d@]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def needs_grounding(value) -> bool:
    """A string the agent cannot make up: it holds a digit or an @ (ids, dates, emails, zips, addresses)."""
    return isinstance(value, str) and _NEEDS_GROUNDING.search(value) is not None


def leaves(args, name: str = ""):
    """(argument name, scalar value) pairs of a nested argument structure."""
    if isinstance(args, dict):
        for k, v in args.items():
            yield from leaves(v, k)
    elif isinstance(args, (list, tuple)):
        for v in args:
            yield from leaves(v, name)
    else:
        yield name, args


def tokens(args) -> list[str]:
    """The grounded values of a call: strings that need grounding; a calculation's numbers."""
    out = []
    for name, v in leaves(args):
        if name == "expression" and isinstance(v, str):
            out += _NUMBER.findall(v)
        elif needs_grounding(v):
            out.append(v)
    return out


def _kind(module, name: str, requestor: str) -> str:
    if requestor == "user":
        return "phone"
    tool = module.TOOLS.get(name)
    if tool is None:
        return "write"  # an unknown tool in a gold list: treat as a request (it will error, as upstream)
    return {READ: "read", WRITE: "write"}.get(tool.kind, "generic")


def _known_identity(text: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    m = re.search(r"\b([a-z]+_[a-z]+_\d{3,5})\b", text)
    if m:
        out["user_id"] = {"user_id": m.group(1)}
    m = re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text)
    if m:
        out["email"] = {"email": m.group(0).rstrip(".")}
    name = re.search(r"(?:You are|Your name is|name is)\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)", text)
    zipc = re.search(r"\b(?:zip ?code|zip)\D{0,12}(\d{5})\b", text, re.IGNORECASE)
    if name and zipc:
        out["name_zip"] = {"first_name": name.group(1), "last_name": name.group(2), "zip": zipc.group(1)}
    m = re.search(r"\b(\d{3}-\d{3}-\d{4})\b", text)
    if m:
        out["phone"] = {"phone_number": m.group(1)}
    return out


def _identity_reads(module, identity) -> list[Call]:
    calls = []
    for slot, (tool, build) in IDENTITY_READS.items():
        if slot in identity and tool in module.TOOLS:
            try:
                calls.append(Call(tool, build(identity[slot]), "assistant", "read"))
            except KeyError:
                pass
    return calls


def _records_of_user(world, user_id: str | None) -> list[tuple[str, str]]:
    """(arg name, id) of the user's reservations / orders in the task's initial database."""
    if not user_id:
        return []
    users = world.state.db.get("users")
    user = users.get(user_id) if users is not None and hasattr(users, "get") else None
    if not hasattr(user, "get"):
        return []
    out = [("reservation_id", r) for r in user.get("reservations") or []]
    out += [("order_id", o) for o in user.get("orders") or []]
    return out


def _named_ids(world, text: str) -> list[tuple[str, str]]:
    """(arg name, id) of the reservations / orders the instructions name (ids present in the database)."""
    named = []
    for table, arg in (("reservations", "reservation_id"), ("orders", "order_id")):
        rows = world.state.db.get(table)
        if rows is not None and hasattr(rows, "__contains__"):
            named += [(arg, v) for v in re.findall(r"#?\b[A-Z0-9]{6,9}\b", text) if v in rows]
    return named


def _decoy(world, goal: Goal, text: str, user_id: str | None) -> tuple[Call | None, str | None]:
    module = world.module
    touched = {v for c in goal.requests for _, v in leaves(c.arguments)}
    named = _named_ids(world, text)
    cancel = {"reservation_id": ("cancel_reservation", {}), "order_id": ("cancel_pending_order",
                                                                         {"reason": "no longer needed"})}
    if "cancel" in text.lower():
        for arg, v in named:
            tool, extra = cancel[arg]
            if v not in touched and tool in module.TOOLS:
                return Call(tool, {arg: v, **extra}, "assistant", "write"), "forbidden"
    for arg, v in _records_of_user(world, user_id):
        tool, extra = cancel[arg]
        if v not in touched and tool in module.TOOLS:
            return Call(tool, {arg: v, **extra}, "assistant", "write"), "mind_change"
    return None, None


def goal_for(data, task: dict) -> Goal:
    """The goal of ``task``, derived from the domain's own task of that id (cached per loaded domain and task).

    The cache lives on the loaded ``data`` itself: keyed by its folder instead, the lookup re-resolved the folder
    as a ``data_dir`` and so loaded (and held) every domain's files a second time."""
    cache = data.memo("goals")
    goal = cache.get(task["id"])
    if goal is None:
        goal = cache[task["id"]] = derive(World.for_task(data, data.task(task["id"])))
    return goal


def derive(world) -> Goal:
    """Derive the goal from a fresh world of the task (the world is used for the gold simulation)."""
    task, module = world.task, world.module
    crit = task.get("evaluation_criteria") or {}
    calls = [Call(a["name"], dict(a.get("arguments") or {}), a.get("requestor", "assistant"),
                  _kind(module, a["name"], a.get("requestor", "assistant")))
             for a in crit.get("actions") or []]
    text = instruction_text(task)
    identity = _known_identity(text)
    # simulate the gold run: which values do the records reveal before each call needs them?
    sim = World.for_task(world.data, world.task)
    seen = ""
    for c in _identity_reads(module, identity):
        seen += sim.call(c.name, c.arguments, "assistant")[0].lower()
    id_tools = {tool: slot for slot, (tool, _) in IDENTITY_READS.items()}
    said = {str(x).lower() for vals in identity.values() for x in vals.values()}
    details: dict[str, str] = {}
    record_ids: dict[str, str] = {}
    for c in calls:
        slot = id_tools.get(c.name)
        if slot is not None and slot not in identity and any(str(v).lower() not in seen for v in tokens(c.arguments)):
            identity[slot] = dict(c.arguments)  # the user gave this identity in the gold run
            said |= {str(x).lower() for x in c.arguments.values()}
        if c.kind != "phone":
            for name, v in leaves(c.arguments):
                low = str(v).lower()
                if not needs_grounding(v) or low in seen or low in said:
                    continue
                if name in RECORD_READS or name.endswith("_id"):
                    record_ids[v] = name
                details.setdefault(f"{name}:{v}", v)
                said.add(low)
        content, _ = sim.call(c.name, c.arguments, c.requestor)
        seen += " " + content.lower()
    user_id = (identity.get("user_id") or {}).get("user_id")
    if user_id is None:
        for c in calls:
            if "user_id" in c.arguments:
                user_id = c.arguments["user_id"]
                break
    for c in calls:
        for arg, table in (("order_id", "orders"), ("reservation_id", "reservations")):
            rows = world.state.db.get(table)
            if user_id is None and arg in c.arguments and rows is not None and c.arguments[arg] in rows:
                user_id = rows[c.arguments[arg]].get("user_id")
    goal = Goal(world.data.name, task["id"], calls, identity, details, record_ids,
                [str(q) for q in crit.get("communicate_info") or []])
    for arg, v in _named_ids(world, text):  # the ids the user names are part of what it can tell
        if needs_grounding(v) and v.lower() not in said:
            record_ids[v] = arg
            details.setdefault(f"{arg}:{v}", v)
    goal.decoy, goal.decoy_kind = _decoy(world, goal, text, user_id)
    return goal
