"""Telecom: the domain module ``world.py`` uses, put together from the carrier, the phone, the scenarios and the
policy, as tau^2-bench's ``TelecomEnvironment``.

* ``telecom_carrier.py``: the agent's tools on accounts, lines and bills (``TOOLS``);
* ``telecom_phone.py``: the simulated phone and the user's tools on it (``USER_TOOLS``);
* ``telecom_scenarios.py``: task set-up and assertions (``FUNCTIONS``, ``USER_FUNCTIONS``);
* ``telecom_policy.py``: the mechanically checkable policy rules (``violations``) and ``identifies``.

``sync`` is tau^2-bench's ``TelecomEnvironment.sync_tools``, run after every
successful tool call: the phone learns whether its line is active, roaming
allowed, data exhausted, and receives (and settles) payment requests for bills
the agent marked as awaiting payment.
"""

from scope_envs.games.tau2.telecom_carrier import (TOOLS, bill_by_id, bills_awaiting_payment, get_customer_by_phone,
                                                   line_by_phone, plan_by_id)
from scope_envs.games.tau2.telecom_phone import USER_TOOLS, normalize_user_db
from scope_envs.games.tau2.telecom_policy import identifies, violations
from scope_envs.games.tau2.telecom_scenarios import FUNCTIONS, USER_FUNCTIONS

__all__ = ["TOOLS", "USER_TOOLS", "FUNCTIONS", "USER_FUNCTIONS", "sync", "violations", "identifies",
           "normalize_user_db"]


def sync(s) -> None:
    """The phone's view of the account, after every call (upstream ``sync_tools``)."""
    sur = s.user_db["surroundings"]
    phone = sur["phone_number"]
    if phone is None:
        return
    line = line_by_phone(s, phone)
    sur["line_active"] = line["status"] == "Active"
    sur["roaming_allowed"] = bool(line["roaming_enabled"])
    plan = plan_by_id(s, line["plan_id"])
    sur["mobile_data_usage_exceeded"] = line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"]
    request = sur["payment_request"]
    if request is not None and request["paid"]:
        s.own("bills")
        bill_by_id(s, request["bill_id"])["status"] = "Paid"
        sur["payment_request"] = None
    if sur["payment_request"] is None:
        bills = bills_awaiting_payment(s, get_customer_by_phone(s, phone))
        if bills:
            sur["payment_request"] = {"bill_id": bills[0]["bill_id"], "amount_due": bills[0]["total_due"],
                                      "paid": False}
