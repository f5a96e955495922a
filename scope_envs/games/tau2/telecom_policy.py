"""Telecom policy rules that can be checked mechanically (recorded in ``World.violations``, never enforced,
as upstream), and which calls identify a customer."""

from scope_envs.games.tau2.telecom_carrier import TOOLS, bills_awaiting_payment, customer_by_id
from scope_envs.games.tau2.tools import WRITE, ToolError

IDENTIFYING = ("get_customer_by_phone", "get_customer_by_id", "get_customer_by_name")


def violations(s, name: str, args: dict, seen_users: set) -> list[str]:
    """Mechanically checkable telecom policy rules broken by this call (recorded, never blocked)."""
    out = []
    if name not in TOOLS or TOOLS[name].kind != WRITE:
        return out
    cid = args.get("customer_id")
    if cid is not None and cid not in seen_users:
        out.append(f"{name}: customer {cid} was not identified (get_customer_by_phone/_id/_name) before a write")
    if name == "send_payment_request" and cid is not None:
        try:
            if bills_awaiting_payment(s, customer_by_id(s, cid)):
                out.append("send_payment_request: a bill is already awaiting payment")
        except ToolError:
            pass
    return out


def identifies(name: str, args: dict, result) -> list | str | None:
    if name in IDENTIFYING:
        rows = result if isinstance(result, list) else [result]
        return [r["customer_id"] for r in rows if isinstance(r, dict) and "customer_id" in r]
    return None
