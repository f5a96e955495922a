"""Telecom, the carrier's side: the agent's tools on accounts, lines, plans and bills, as in tau^2-bench.

``TOOLS`` read and write the carrier database (``state.db``: ``customers``,
``lines``, ``plans``, ``bills``, ``devices``; lists, copied per episode before a
write with ``s.own``). The lookups (``customer_by_id``, ``line_by_id``, ...) are
shared with the scenario functions, the policy checks and ``telecom.sync``.

The clock is 2025-02-25. A draft bill that ``refuel_data`` has to create gets a
deterministic id (``B9000001``...) where upstream draws a random uuid — nothing
in the evaluation reads it, and determinism lets equal runs give equal databases.
"""

from datetime import date, timedelta

from scope_envs.games.tau2.tools import GENERIC, READ, WRITE, ToolError, collect, tool

TODAY = date(2025, 2, 25)


# ---------------------------------------------------------------- lookups
def _find(rows, key, value, what):
    for r in rows:
        if r[key] == value:
            return r
    raise ToolError(f"{what} {value} not found")


def line_by_id(s, line_id):
    return _find(s.db["lines"], "line_id", line_id, "Line with ID")


def line_by_phone(s, phone):
    return _find(s.db["lines"], "phone_number", phone, "Line with phone number")


def plan_by_id(s, plan_id):
    return _find(s.db["plans"], "plan_id", plan_id, "Plan with ID")


def bill_by_id(s, bill_id):
    return _find(s.db["bills"], "bill_id", bill_id, "Bill with ID")


def customer_by_id(s, customer_id):
    for c in s.db["customers"]:
        if c["customer_id"] == customer_id:
            return c
    raise ToolError(f"Customer with ID {customer_id} not found")


def customer_line(s, customer_id, line_id):
    customer = customer_by_id(s, customer_id)
    if line_id not in customer["line_ids"]:
        raise ToolError(f"Line {line_id} not found for customer {customer_id}")
    return line_by_id(s, line_id)


def bills_awaiting_payment(s, customer):
    return [b for b in (bill_by_id(s, i) for i in customer["bill_ids"]) if b["status"] == "Awaiting Payment"]


# ---------------------------------------------------------------- the agent's tools
CUSTOMER_ID = "ID of the customer who owns the line."
LINE_ID = "ID of the line."


@tool(READ, "Finds a customer by their primary contact or line phone number.",
      phone_number="The phone number to search for.")
def get_customer_by_phone(s, phone_number: str):
    for c in s.db["customers"]:
        if c["phone_number"] == phone_number:
            return c
        for line_id in c["line_ids"]:
            if line_by_id(s, line_id)["phone_number"] == phone_number:
                return c
    raise ToolError(f"Customer with phone number {phone_number} not found")


@tool(READ, "Retrieves a customer directly by their unique ID.", customer_id="The unique identifier of the customer.")
def get_customer_by_id(s, customer_id: str):
    return customer_by_id(s, customer_id)


@tool(READ, "Searches for customers by name and DOB. May return multiple matches if names are similar; the DOB "
            "helps disambiguate.", full_name="The full name of the customer.",
      dob="Date of birth for verification, in the format YYYY-MM-DD.")
def get_customer_by_name(s, full_name: str, dob: str):
    return [c for c in s.db["customers"] if c["full_name"].lower() == full_name.lower() and c["date_of_birth"] == dob]


@tool(READ, "Retrieves the details for a given ID: a customer (C...), line (L...), device (D...), bill (B...) or "
            "plan (P...).", id="The ID of the object to retrieve.")
def get_details_by_id(s, id: str):
    if id.startswith("L"):
        return line_by_id(s, id)
    if id.startswith("D"):
        return _find(s.db["devices"], "device_id", id, "Device with ID")
    if id.startswith("B"):
        return bill_by_id(s, id)
    if id.startswith("C"):
        return customer_by_id(s, id)
    if id.startswith("P"):
        return plan_by_id(s, id)
    raise ToolError(f"Unknown ID format or type: {id}")


@tool(WRITE, "Suspends a specific line (max 6 months). Checks: line status must be Active. Logic: sets line status to "
             "Suspended and the suspension start date to today.", customer_id=CUSTOMER_ID, line_id=LINE_ID,
      reason="The reason for the suspension.")
def suspend_line(s, customer_id: str, line_id: str, reason: str):
    s.own("lines")
    line = customer_line(s, customer_id, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend")
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY.isoformat()
    return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}


@tool(WRITE, "Resumes a suspended line. Checks: line status must be Suspended or Pending Activation. Logic: sets line "
             "status to Active and clears the suspension start date.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def resume_line(s, customer_id: str, line_id: str):
    s.own("lines")
    line = customer_line(s, customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):
        raise ToolError("Line must be suspended to resume")
    line["status"] = "Active"
    line["suspension_start_date"] = None
    return {"message": "Line resumed successfully", "line": line}


@tool(READ, "Retrieves a list of the customer's bills, most recent first.", customer_id="ID of the customer.",
      limit="Maximum number of bills to return.")
def get_bills_for_customer(s, customer_id: str, limit: int = 12):
    customer = customer_by_id(s, customer_id)
    bills = sorted((bill_by_id(s, i) for i in customer["bill_ids"]), key=lambda b: b["issue_date"], reverse=True)
    return bills[:limit]


@tool(WRITE, "Sends a payment request to the customer for a specific bill. Checks: the customer exists, the bill "
             "belongs to the customer, and no other bill is awaiting payment. Logic: sets the bill status to "
             "Awaiting Payment.", customer_id="ID of the customer.", bill_id="ID of the bill.")
def send_payment_request(s, customer_id: str, bill_id: str):
    s.own("bills")
    customer = customer_by_id(s, customer_id)
    if bills_awaiting_payment(s, customer):
        raise ToolError("A bill is already awaiting payment for this customer")
    if bill_id not in customer["bill_ids"]:
        raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
    bill_by_id(s, bill_id)["status"] = "Awaiting Payment"
    return f"Payment request sent to the customer for bill {bill_id}"


@tool(READ, "Retrieves current billing cycle data usage for a line, including data refueling amount, data limit "
            "and cycle end date.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def get_data_usage(s, customer_id: str, line_id: str):
    line = customer_line(s, customer_id, line_id)
    plan = plan_by_id(s, line["plan_id"])
    cycle_end = date(TODAY.year, TODAY.month + 1 if TODAY.month < 12 else 1, 1) - timedelta(days=1)
    return {"line_id": line_id, "data_used_gb": line["data_used_gb"], "data_limit_gb": plan["data_limit_gb"],
            "data_refueling_gb": line["data_refueling_gb"], "cycle_end_date": cycle_end.isoformat()}


@tool(WRITE, "Enables international roaming on a line.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def enable_roaming(s, customer_id: str, line_id: str):
    s.own("lines")
    line = customer_line(s, customer_id, line_id)
    if line["roaming_enabled"]:
        return "Roaming was already enabled"
    line["roaming_enabled"] = True
    return "Roaming enabled successfully"


@tool(WRITE, "Disables international roaming on a line.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def disable_roaming(s, customer_id: str, line_id: str):
    s.own("lines")
    line = customer_line(s, customer_id, line_id)
    if not line["roaming_enabled"]:
        return "Roaming was already disabled"
    line["roaming_enabled"] = False
    return "Roaming disabled successfully"


@tool(GENERIC, "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user "
               "explicitly asks for a human agent, or given the policy and the available tools, you cannot solve "
               "the user's issue.", summary="A summary of the user's issue.")
def transfer_to_human_agents(s, summary: str):
    return "Transfer successful"


def _charge(s, customer_id, amount, description):
    """Add a line item to the customer's draft bill, creating next month's draft when there is none."""
    s.own("bills", "customers")
    customer = customer_by_id(s, customer_id)
    draft = next((b for b in (bill_by_id(s, i) for i in customer["bill_ids"]) if b["status"] == "Draft"), None)
    if draft is None:
        start = (TODAY.replace(day=1) + timedelta(days=32)).replace(day=1)
        end = start.replace(month=start.month + 1 if start.month < 12 else 1,
                            year=start.year if start.month < 12 else start.year + 1) - timedelta(days=1)
        s.ids["bill"] = s.ids.get("bill", 0) + 1
        draft = {"bill_id": f"B9{s.ids['bill']:06d}", "customer_id": customer_id, "period_start": start.isoformat(),
                 "period_end": end.isoformat(), "issue_date": start.isoformat(), "total_due": 0,
                 "due_date": (start + timedelta(days=14)).isoformat(), "line_items": [], "status": "Draft"}
        s.db["bills"].append(draft)
        customer["bill_ids"].append(draft["bill_id"])
    draft["line_items"].append({"description": description, "amount": amount, "date": TODAY.isoformat(),
                                "item_type": "Credit" if amount < 0 else "Charge"})
    draft["total_due"] += amount


@tool(WRITE, "Refuels data for a specific line, adding to the customer's bill. Checks: the line exists and the "
             "amount is positive. Logic: adds the data to the line and charges the customer for it.",
      customer_id=CUSTOMER_ID, line_id=LINE_ID, gb_amount="Amount of data to add in GB.")
def refuel_data(s, customer_id: str, line_id: str, gb_amount: float):
    s.own("lines", "bills", "customers")
    line = customer_line(s, customer_id, line_id)
    if gb_amount <= 0:
        raise ToolError("Refuel amount must be positive")
    plan = plan_by_id(s, line["plan_id"])
    charge = gb_amount * plan["data_refueling_price_per_gb"]
    line["data_refueling_gb"] += gb_amount
    _charge(s, customer_id, charge, f"Data refueling: {gb_amount} GB at ${plan['data_refueling_price_per_gb']}/GB")
    return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": line["data_refueling_gb"], "charge": charge}


TOOLS = collect(globals())
