"""Telecom: the agent's tools (accounts, lines, bills) and the user's phone tools, as in tau^2-bench.

The agent side (``TOOLS``) reads and writes the carrier database; the user side
(``USER_TOOLS``) is the customer's simulated phone (``state.user_db``: ``device``
and ``surroundings``). ``sync`` is tau^2-bench's ``TelecomEnvironment.sync_tools``,
run after every successful tool call: the phone learns whether its line is
active, roaming allowed, data exhausted, and receives (and settles) payment
requests for bills the agent marked as awaiting payment.

The clock is 2025-02-25. A draft bill that ``refuel_data`` has to create gets a
deterministic id (``B9000001``...) where upstream draws a random uuid — nothing
in the evaluation reads it, and determinism lets equal runs give equal databases.
Upstream shares one ``VpnDetails`` object between phones, so ``break_vpn`` in one
task degrades the default VPN of every later task in that process; here each
phone gets its own copy.
"""

from datetime import date, timedelta

from scope_envs.games.tau2.state import clone, merge
from scope_envs.games.tau2.tools import GENERIC, READ, WRITE, ToolError, collect, tool

TODAY = date(2025, 2, 25)
MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
DEFAULT_APN = {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
               "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}
DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}
DEFAULT_USER_DB = {
    "device": {
        "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
        "network_signal_strength": "good", "network_technology_connected": "5G",
        "network_connection_status": "connected", "battery_level": 80, "data_enabled": True,
        "roaming_enabled": False, "network_mode_preference": "4g_5g_preferred", "active_apn_settings": DEFAULT_APN,
        "wifi_enabled": False, "wifi_connected": False, "wifi_ssid": None, "wifi_signal_strength": "none",
        "wifi_calling_enabled": False, "wifi_calling_mms_over_wifi": False, "data_saver_mode": False,
        "vpn_enabled_setting": False, "vpn_connected": False, "vpn_details": None,
        "app_statuses": {
            "messaging": {"app_name": "messaging",
                          "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
            "browser": {"app_name": "browser",
                        "permissions": {"sms": False, "storage": True, "phone": False, "network": True}}},
    },
    "surroundings": {
        "name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False,
        "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
        "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None,
    },
}


def normalize_user_db(user_db: dict | None) -> dict:
    """The phone with every field upstream's pydantic defaults would fill (the TOML lists only some)."""
    out = clone(DEFAULT_USER_DB)
    if user_db:
        merge(out, user_db)
    return out


# ---------------------------------------------------------------- agent side: lookups
def _find(rows, key, value, what):
    for r in rows:
        if r[key] == value:
            return r
    raise ToolError(f"{what} {value} not found")


def _line(s, line_id):
    return _find(s.db["lines"], "line_id", line_id, "Line with ID")


def _line_by_phone(s, phone):
    return _find(s.db["lines"], "phone_number", phone, "Line with phone number")


def _plan(s, plan_id):
    return _find(s.db["plans"], "plan_id", plan_id, "Plan with ID")


def _bill(s, bill_id):
    return _find(s.db["bills"], "bill_id", bill_id, "Bill with ID")


def _customer(s, customer_id):
    for c in s.db["customers"]:
        if c["customer_id"] == customer_id:
            return c
    raise ToolError(f"Customer with ID {customer_id} not found")


def _target_line(s, customer_id, line_id):
    customer = _customer(s, customer_id)
    if line_id not in customer["line_ids"]:
        raise ToolError(f"Line {line_id} not found for customer {customer_id}")
    return _line(s, line_id)


def _awaiting(s, customer):
    return [b for b in (_bill(s, i) for i in customer["bill_ids"]) if b["status"] == "Awaiting Payment"]


CUSTOMER_ID = "ID of the customer who owns the line."
LINE_ID = "ID of the line."


@tool(READ, "Finds a customer by their primary contact or line phone number.",
      phone_number="The phone number to search for.")
def get_customer_by_phone(s, phone_number: str):
    for c in s.db["customers"]:
        if c["phone_number"] == phone_number:
            return c
        for line_id in c["line_ids"]:
            if _line(s, line_id)["phone_number"] == phone_number:
                return c
    raise ToolError(f"Customer with phone number {phone_number} not found")


@tool(READ, "Retrieves a customer directly by their unique ID.", customer_id="The unique identifier of the customer.")
def get_customer_by_id(s, customer_id: str):
    return _customer(s, customer_id)


@tool(READ, "Searches for customers by name and DOB. May return multiple matches if names are similar; the DOB "
            "helps disambiguate.", full_name="The full name of the customer.",
      dob="Date of birth for verification, in the format YYYY-MM-DD.")
def get_customer_by_name(s, full_name: str, dob: str):
    return [c for c in s.db["customers"] if c["full_name"].lower() == full_name.lower() and c["date_of_birth"] == dob]


@tool(READ, "Retrieves the details for a given ID: a customer (C...), line (L...), device (D...), bill (B...) or "
            "plan (P...).", id="The ID of the object to retrieve.")
def get_details_by_id(s, id: str):
    if id.startswith("L"):
        return _line(s, id)
    if id.startswith("D"):
        return _find(s.db["devices"], "device_id", id, "Device with ID")
    if id.startswith("B"):
        return _bill(s, id)
    if id.startswith("C"):
        return _customer(s, id)
    if id.startswith("P"):
        return _plan(s, id)
    raise ToolError(f"Unknown ID format or type: {id}")


@tool(WRITE, "Suspends a specific line (max 6 months). Checks: line status must be Active. Logic: sets line status to "
             "Suspended and the suspension start date to today.", customer_id=CUSTOMER_ID, line_id=LINE_ID,
      reason="The reason for the suspension.")
def suspend_line(s, customer_id: str, line_id: str, reason: str):
    s.own("lines")
    line = _target_line(s, customer_id, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend")
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY.isoformat()
    return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}


@tool(WRITE, "Resumes a suspended line. Checks: line status must be Suspended or Pending Activation. Logic: sets line "
             "status to Active and clears the suspension start date.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def resume_line(s, customer_id: str, line_id: str):
    s.own("lines")
    line = _target_line(s, customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):
        raise ToolError("Line must be suspended to resume")
    line["status"] = "Active"
    line["suspension_start_date"] = None
    return {"message": "Line resumed successfully", "line": line}


@tool(READ, "Retrieves a list of the customer's bills, most recent first.", customer_id="ID of the customer.",
      limit="Maximum number of bills to return.")
def get_bills_for_customer(s, customer_id: str, limit: int = 12):
    customer = _customer(s, customer_id)
    bills = sorted((_bill(s, i) for i in customer["bill_ids"]), key=lambda b: b["issue_date"], reverse=True)
    return bills[:limit]


@tool(WRITE, "Sends a payment request to the customer for a specific bill. Checks: the customer exists, the bill "
             "belongs to the customer, and no other bill is awaiting payment. Logic: sets the bill status to "
             "Awaiting Payment.", customer_id="ID of the customer.", bill_id="ID of the bill.")
def send_payment_request(s, customer_id: str, bill_id: str):
    s.own("bills")
    customer = _customer(s, customer_id)
    if _awaiting(s, customer):
        raise ToolError("A bill is already awaiting payment for this customer")
    if bill_id not in customer["bill_ids"]:
        raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
    _bill(s, bill_id)["status"] = "Awaiting Payment"
    return f"Payment request sent to the customer for bill {bill_id}"


@tool(READ, "Retrieves current billing cycle data usage for a line, including data refueling amount, data limit "
            "and cycle end date.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def get_data_usage(s, customer_id: str, line_id: str):
    line = _target_line(s, customer_id, line_id)
    plan = _plan(s, line["plan_id"])
    cycle_end = date(TODAY.year, TODAY.month + 1 if TODAY.month < 12 else 1, 1) - timedelta(days=1)
    return {"line_id": line_id, "data_used_gb": line["data_used_gb"], "data_limit_gb": plan["data_limit_gb"],
            "data_refueling_gb": line["data_refueling_gb"], "cycle_end_date": cycle_end.isoformat()}


@tool(WRITE, "Enables international roaming on a line.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def enable_roaming(s, customer_id: str, line_id: str):
    s.own("lines")
    line = _target_line(s, customer_id, line_id)
    if line["roaming_enabled"]:
        return "Roaming was already enabled"
    line["roaming_enabled"] = True
    return "Roaming enabled successfully"


@tool(WRITE, "Disables international roaming on a line.", customer_id=CUSTOMER_ID, line_id=LINE_ID)
def disable_roaming(s, customer_id: str, line_id: str):
    s.own("lines")
    line = _target_line(s, customer_id, line_id)
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
    customer = _customer(s, customer_id)
    draft = next((b for b in (_bill(s, i) for i in customer["bill_ids"]) if b["status"] == "Draft"), None)
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
    line = _target_line(s, customer_id, line_id)
    if gb_amount <= 0:
        raise ToolError("Refuel amount must be positive")
    plan = _plan(s, line["plan_id"])
    charge = gb_amount * plan["data_refueling_price_per_gb"]
    line["data_refueling_gb"] += gb_amount
    _charge(s, customer_id, charge, f"Data refueling: {gb_amount} GB at ${plan['data_refueling_price_per_gb']}/GB")
    return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": line["data_refueling_gb"], "charge": charge}


# agent-side environment functions (task set-up and assertions), not offered to the agent
def set_data_usage(s, customer_id: str, line_id: str, data_used_gb: float):
    s.own("lines")
    _target_line(s, customer_id, line_id)["data_used_gb"] = data_used_gb
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


def suspend_line_for_overdue_bill(s, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool):
    s.own("lines", "bills", "customers")
    line = _line(s, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend for unpaid bill")
    amount = _plan(s, line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ToolError("Amount must be positive for overdue bill")
    customer = _customer(s, customer_id)
    if any(_bill(s, i)["status"] == "Overdue" for i in customer["bill_ids"]):
        raise ToolError("Customer already has an overdue bill")
    last_day = TODAY.replace(day=1) - timedelta(days=1)
    first_day = last_day.replace(day=1)
    s.db["bills"].append({
        "bill_id": new_bill_id, "customer_id": customer_id, "period_start": first_day.isoformat(),
        "period_end": last_day.isoformat(), "issue_date": first_day.isoformat(), "total_due": 0 + amount,
        "due_date": (first_day + timedelta(days=14)).isoformat(),
        "line_items": [{"description": f"Charge for line {line_id}", "amount": amount, "date": TODAY.isoformat(),
                        "item_type": "Charge"}], "status": "Overdue"})
    customer["bill_ids"].append(new_bill_id)
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY.isoformat()
    if contract_ended:
        line["contract_end_date"] = last_day.isoformat()
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


def assert_data_refueling_amount(s, customer_id: str, line_id: str, expected_amount: float) -> bool:
    return abs(_target_line(s, customer_id, line_id)["data_refueling_gb"] - expected_amount) < 1e-6


def assert_line_status(s, customer_id: str, line_id: str, expected_status: str) -> bool:
    return _target_line(s, customer_id, line_id)["status"] == expected_status


def assert_overdue_bill_exists(s, customer_id: str, overdue_bill_id: str) -> bool:
    customer = _customer(s, customer_id)
    if overdue_bill_id not in customer["bill_ids"]:
        raise ToolError(f"Overdue bill {overdue_bill_id} not found")
    if _bill(s, overdue_bill_id)["status"] != "Overdue":
        raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
    return True


def assert_no_overdue_bill(s, overdue_bill_id: str) -> bool:
    try:
        return _bill(s, overdue_bill_id)["status"] == "Paid"
    except ToolError:
        return True


TOOLS = collect(globals())


def sync(s) -> None:
    """The phone's view of the account, after every call (upstream ``sync_tools``)."""
    sur = s.user_db["surroundings"]
    phone = sur["phone_number"]
    if phone is None:
        return
    line = _line_by_phone(s, phone)
    sur["line_active"] = line["status"] == "Active"
    sur["roaming_allowed"] = bool(line["roaming_enabled"])
    plan = _plan(s, line["plan_id"])
    sur["mobile_data_usage_exceeded"] = line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"]
    request = sur["payment_request"]
    if request is not None and request["paid"]:
        s.own("bills")
        _bill(s, request["bill_id"])["status"] = "Paid"
        sur["payment_request"] = None
    if sur["payment_request"] is None:
        bills = _awaiting(s, get_customer_by_phone(s, phone))
        if bills:
            sur["payment_request"] = {"bill_id": bills[0]["bill_id"], "amount_due": bills[0]["total_due"],
                                      "paid": False}


# ---------------------------------------------------------------- user side: the phone
def _dev(s):
    return s.user_db["device"]


def _sim_status(d):
    return "missing" if d["sim_card_missing"] else d["sim_card_status"]


SIGNAL_ICONS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}


def _status_bar(s):
    d = _dev(s)
    parts = []
    if d["airplane_mode"]:
        parts.append("✈️ Airplane Mode")
    else:
        parts.append(SIGNAL_ICONS.get(d["network_signal_strength"], "📵 No Signal"))
        if d["network_technology_connected"] != "none":
            parts.append(d["network_technology_connected"])
        if d["data_enabled"] and d["network_technology_connected"] != "none":
            parts.append("📱 Data Enabled")
            if d["data_saver_mode"]:
                parts.append("🔽 Data Saver")
        else:
            parts.append("📵 Data Disabled")
    if d["wifi_enabled"] and d["wifi_connected"]:
        parts.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
    if d["vpn_connected"]:
        parts.append("🔒 VPN Connected")
    parts.append(f"🔋 {d['battery_level']}%")
    return " | ".join(parts)


def _with_bar(s, text):
    return f"{text}\nStatus Bar: {_status_bar(s)}"


def network_search(s):
    """Reconnect after a change (upstream ``simulate_network_search``)."""
    d, sig = _dev(s), s.user_db["surroundings"]["signal_strength"]
    if _sim_status(d) == "active":
        d["network_connection_status"] = "connected"
        pref = d["network_mode_preference"]
        if pref == "4g_5g_preferred":
            tech = "4G" if sig.get("5G", "none") == "none" else "5G"
        else:
            tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(pref, "4G")
        d["network_technology_connected"] = tech
        d["network_signal_strength"] = sig.get(tech, "none")
    else:
        _no_service(d)
    if (d["airplane_mode"] or d["active_apn_settings"]["apn_name"] == "broken"
            or not s.user_db["surroundings"]["line_active"]):
        _no_service(d)


def _no_service(d):
    d["network_connection_status"] = "no_service"
    d["network_technology_connected"] = "none"
    d["network_signal_strength"] = "none"


def _data_working(s):
    d, sur = _dev(s), s.user_db["surroundings"]
    if d["airplane_mode"] or d["network_signal_strength"] == "none":
        return False
    if d["network_connection_status"] == "no_service":
        return False
    if sur["is_abroad"] and (not d["roaming_enabled"] or not sur["roaming_allowed"]):
        return False
    return bool(d["data_enabled"]) and not sur["mobile_data_usage_exceeded"]


def _speed(s):
    if not _data_working(s):
        return None, "No Connection"
    d = _dev(s)
    factor = 0.1 if (d["vpn_connected"] and d["vpn_details"]
                     and d["vpn_details"]["server_performance"] == "poor") else 1.0
    if d["data_saver_mode"]:
        factor *= 0.2
    lo, hi = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0)}.get(
        d["network_technology_connected"], (0.0, 0.0))
    sig = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}.get(d["network_signal_strength"], 0.0)
    speed = round((lo + hi) / 2.0 * sig * factor, 2)
    desc = ("Very Poor" if speed < 1 else "Poor" if speed < 5 else "Fair" if speed < 25
            else "Good" if speed < 100 else "Excellent")
    return speed, desc


def _can_send_mms(s):
    d = _dev(s)
    if not _data_working(s) or d["network_technology_connected"] == "2G":
        return False
    if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
        return False
    if d["active_apn_settings"]["mmsc_url"] is None:
        return False
    app = d["app_statuses"].get("messaging")
    return bool(app and app["permissions"]["storage"] and app["permissions"]["sms"])


def _toggle_airplane(s):
    d = _dev(s)
    was_on = d["airplane_mode"]
    d["airplane_mode"] = not was_on
    if was_on:
        d["network_connection_status"] = "searching"
        if d["wifi_enabled"]:
            d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
    else:
        d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
        if d["vpn_connected"]:
            _disconnect_vpn(d)
    network_search(s)
    return d["airplane_mode"]


def _disconnect_vpn(d):
    if not d["vpn_connected"]:
        return False
    d["vpn_connected"], d["vpn_details"] = False, None
    return True


def _connect_vpn(d):
    if d["vpn_connected"]:
        return None
    d["vpn_connected"], d["vpn_details"] = True, dict(DEFAULT_VPN)
    return True


def _flip(s, key, search=True):
    d = _dev(s)
    d[key] = not d[key]
    if search:
        network_search(s)
    return d[key]


@tool(READ, "Shows what icons are currently visible in your phone's status bar: signal, network type, data, "
            "Wi-Fi, VPN, airplane mode and battery.")
def check_status_bar(s):
    return f"Status Bar: {_status_bar(s)}"


@tool(READ, "Checks your phone's connection status to cellular networks and Wi-Fi: airplane mode, SIM, signal, "
            "network type, mobile data, roaming and Wi-Fi.")
def check_network_status(s):
    d = _dev(s)
    lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}", f"SIM Card Status: {_sim_status(d)}",
             f"Cellular Connection: {d['network_connection_status']}",
             f"Cellular Signal: {d['network_signal_strength']}",
             f"Cellular Network Type: {d['network_technology_connected']}",
             f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
             f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
             f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
             f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
    if d["wifi_connected"]:
        lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
    return "\n".join(lines)


@tool(READ, "Shows the current network mode preference.")
def check_network_mode_preference(s):
    return f"Network Mode Preference: {_dev(s)['network_mode_preference']}"


@tool(WRITE, "Changes the type of cellular network your phone prefers to connect to (e.g. 5G, LTE/4G, 3G).",
      mode=f"The network mode preference, one of {', '.join(MODES)}.")
def set_network_mode_preference(s, mode: str):
    if mode not in MODES:
        return _with_bar(s, f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: "
                            f"{', '.join(MODES)}")
    _dev(s)["network_mode_preference"] = mode
    network_search(s)
    return _with_bar(s, f"Preferred Network Mode set to: {mode}")


@tool(READ, "Measures your current internet connection speed (download speed) and what it can support.")
def run_speed_test(s):
    speed, desc = _speed(s)
    if speed is None:
        return f"Speed test failed: {desc or 'Could not determine speed'}."
    advice = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
              "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
              "Fair": "Connection is okay for web browsing and some standard definition streaming.",
              "Good": "Connection is good for most activities, including HD streaming.",
              "Excellent": "Connection is very fast."}.get(desc, "")
    return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {advice}"


@tool(WRITE, "Toggles Airplane Mode ON or OFF. When ON, it disconnects all wireless communications.")
def toggle_airplane_mode(s):
    return _with_bar(s, f"Airplane Mode is now {'ON' if _toggle_airplane(s) else 'OFF'}.")


@tool(READ, "Checks if your SIM card is working correctly and displays its current status.")
def check_sim_status(s):
    return {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}.get(_sim_status(_dev(s)), "Unknown SIM status")


@tool(WRITE, "Removes and reinserts your SIM card, which can help with recognition issues.")
def reseat_sim_card(s):
    _dev(s)["sim_card_missing"] = False
    network_search(s)
    return _with_bar(s, "SIM card re-seated successfully.")


@tool(WRITE, "Toggles your phone's mobile data connection ON or OFF.")
def toggle_data(s):
    return _with_bar(s, f"Mobile Data is now {'ON' if _flip(s, 'data_enabled') else 'OFF'}.")


@tool(WRITE, "Toggles Data Roaming ON or OFF. When ON, your phone can use data networks outside your home network.")
def toggle_roaming(s):
    return _with_bar(s, f"Data Roaming is now {'ON' if _flip(s, 'roaming_enabled') else 'OFF'}.")


@tool(READ, "Checks if your phone has any data-limiting features active (Data Saver).")
def check_data_restriction_status(s):
    return "Data Saver mode is ON (limits data usage)." if _dev(s)["data_saver_mode"] else "Data Saver mode is OFF."


@tool(WRITE, "Toggles Data Saver mode ON or OFF. When ON, it reduces data usage, which may slow your connection.")
def toggle_data_saver_mode(s):
    return _with_bar(s, f"Data Saver Mode is now {'ON' if _flip(s, 'data_saver_mode', False) else 'OFF'}.")


@tool(READ, "Checks the technical APN settings your phone uses to connect to your carrier's mobile data network.")
def check_apn_settings(s):
    apn = _dev(s)["active_apn_settings"]
    return (f"Current APN Name: {apn['apn_name'] or 'Not Set'}\nMMSC URL (for picture messages): "
            f"{apn['mmsc_url'] or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")


@tool(WRITE, "Sets the APN settings for the phone.",
      apn_settings="The APN settings: apn_name ('internet' or 'broken'), reset_at_reboot, mms_apn, mmsc_url, "
                   "mms_proxy, mms_port.")
def set_apn_settings(s, apn_settings: dict):
    unknown = set(apn_settings) - set(DEFAULT_APN)
    if unknown:
        raise ToolError(f"unknown APN setting(s) {sorted(unknown)}")
    if apn_settings.get("apn_name", "internet") not in ("internet", "broken"):
        raise ToolError(f"apn_name must be 'internet' or 'broken', got {apn_settings['apn_name']!r}")
    _dev(s)["active_apn_settings"] = {**DEFAULT_APN, **apn_settings}
    network_search(s)
    return _with_bar(s, f"APN settings set to: {_dev(s)['active_apn_settings']['apn_name']}")


@tool(WRITE, "Resets your APN settings to the default settings (applied at the next reboot).")
def reset_apn_settings(s):
    _dev(s)["active_apn_settings"]["reset_at_reboot"] = True
    network_search(s)
    return _with_bar(s, "APN settings will reset at reboot.")


@tool(READ, "Checks your Wi-Fi connection status: on or off, the network and its signal.")
def check_wifi_status(s):
    d = _dev(s)
    if not d["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if d["wifi_connected"]:
        return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
    return "Wi-Fi is ON but not connected to any network."


@tool(WRITE, "Toggles your phone's Wi-Fi radio ON or OFF.")
def toggle_wifi(s):
    d = _dev(s)
    if d["airplane_mode"]:
        return _with_bar(s, "Cannot change Wi-Fi settings while Airplane Mode is ON.")
    d["wifi_enabled"] = not d["wifi_enabled"]
    if not d["wifi_enabled"]:
        d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
    return _with_bar(s, f"Wi-Fi is now {'ON' if d['wifi_enabled'] else 'OFF'}.")


@tool(READ, "Checks if Wi-Fi Calling is enabled on your device.")
def check_wifi_calling_status(s):
    return f"Wi-Fi Calling is currently turned {'ON' if _dev(s)['wifi_calling_enabled'] else 'OFF'}."


@tool(WRITE, "Toggles Wi-Fi Calling ON or OFF (calls and texts over Wi-Fi).")
def toggle_wifi_calling(s):
    return _with_bar(s, f"Wi-Fi Calling is now {'ON' if _flip(s, 'wifi_calling_enabled', False) else 'OFF'}.")


@tool(READ, "Checks if you're using a VPN connection, and its details.")
def check_vpn_status(s):
    d = _dev(s)
    if d["vpn_connected"]:
        if d["vpn_details"]:
            return f"VPN is ON and connected. Details: {d['vpn_details']}"
        return "VPN is ON and connected (no specific details available)."
    if d["vpn_enabled_setting"]:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


@tool(WRITE, "Connects to your VPN.")
def connect_vpn(s):
    if _connect_vpn(_dev(s)) is None:
        return "VPN already connected."
    return _with_bar(s, "VPN connected successfully.")


@tool(WRITE, "Disconnects any active VPN connection.")
def disconnect_vpn(s):
    ok = _disconnect_vpn(_dev(s))
    return _with_bar(s, "VPN disconnected successfully." if ok else "No active VPN connection to disconnect.")


@tool(READ, "Returns the name of all installed apps on the phone.")
def check_installed_apps(s):
    return f"The following apps are installed on the phone: {', '.join(_dev(s)['app_statuses'])}"


@tool(READ, "Checks detailed information about a specific app, including its permissions.",
      app_name="The name of the app.")
def check_app_status(s, app_name: str):
    app = _dev(s)["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    perms = [k.replace("_", " ").lower() for k, v in app["permissions"].items() if v]
    lines = [f"Status for App: {app_name}"]
    lines += [" - Permissions Granted:"] + [f"   - {p}" for p in perms] if perms else [" - Permissions: None granted."]
    return "\n".join(lines)


@tool(READ, "Checks what permissions a specific app currently has.", app_name="The name of the app.")
def check_app_permissions(s, app_name: str):
    app = _dev(s)["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    perms = [k.replace("_", " ").lower() for k, v in app["permissions"].items() if v]
    if not perms:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(perms)}."


@tool(WRITE, "Gives a specific permission to an app (sms, storage, phone or network).",
      app_name="The name of the app.", permission="The permission to grant.")
def grant_app_permission(s, app_name: str, permission: str):
    app = _dev(s)["app_statuses"].get(app_name)
    permission = permission.lower()
    if app is None:
        ok, msg = False, f"App '{app_name}' not found. Cannot grant permission."
    elif permission not in app["permissions"]:
        ok, msg = False, (f"Permission '{permission}' not tracked for app '{app_name}', available permissions: "
                          f"{list(app['permissions'])}")
    else:
        app["permissions"][permission] = True
        ok, msg = True, f"Permission '{permission}' granted to app '{app_name}'."
    return _with_bar(s, ("Success. " if ok else "Error. ") + msg)


@tool(READ, "Checks if the default messaging app can send MMS messages.")
def can_send_mms(s):
    return ("Your messaging app can send MMS messages." if _can_send_mms(s)
            else "Your messaging app cannot send MMS messages.")


@tool(WRITE, "Restarts your phone completely, which can resolve many temporary software glitches.")
def reboot_device(s):
    d, lines = _dev(s), []
    if d["active_apn_settings"]["reset_at_reboot"]:
        lines.append("Resetting APN settings...")
        d["active_apn_settings"] = dict(DEFAULT_APN)
    lines.append("Restarting network services...")
    d["network_connection_status"] = "searching"
    network_search(s)
    return _with_bar(s, "\n".join(lines))


@tool(READ, "Checks if the agent has sent you a payment request.")
def check_payment_request(s):
    req = s.user_db["surroundings"]["payment_request"]
    if req is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {req['bill_id']} of {req['amount_due']} USD."


@tool(WRITE, "Makes a payment for the bill that the agent has sent you.")
def make_payment(s):
    req = s.user_db["surroundings"]["payment_request"]
    if req is None:
        return "You do not have a payment request."
    req["paid"] = True
    return f"Payment of {req['amount_due']} USD has been made for bill {req['bill_id']}."


USER_TOOLS = {n: t for n, t in collect(globals()).items() if n not in TOOLS}


# user-side environment functions: task set-up ("break" the phone) and assertions
def set_user_info(s, name: str, phone_number: str):
    s.user_db["surroundings"]["name"], s.user_db["surroundings"]["phone_number"] = name, phone_number


def set_user_location(s, abroad: bool):
    s.user_db["surroundings"]["is_abroad"] = abroad


def _force(flag_key, value):
    """turn_X_on/off: toggle (with a network search) until the flag has ``value``, as upstream does."""
    def fn(s):
        if _flip(s, flag_key) != value:
            _flip(s, flag_key)
    return fn


def turn_airplane_mode_on(s):
    if not _toggle_airplane(s):
        _toggle_airplane(s)


def turn_airplane_mode_off(s):
    if _toggle_airplane(s):
        _toggle_airplane(s)


def turn_data_on(s):
    _dev(s)["data_enabled"] = True  # upstream sets the flag without a network search


def turn_data_saver_mode_on(s):
    _dev(s)["data_saver_mode"] = True


def turn_data_saver_mode_off(s):
    _dev(s)["data_saver_mode"] = False


def unseat_sim_card(s):
    _dev(s)["sim_card_missing"] = True
    network_search(s)


def lock_sim_card(s, mode: str):
    if mode in ("pin", "puk"):
        _dev(s)["sim_card_status"] = f"locked_{mode}"
    network_search(s)


def break_apn_settings(s):
    _dev(s)["active_apn_settings"]["apn_name"] = "broken"
    network_search(s)


def break_apn_mms_setting(s):
    _dev(s)["active_apn_settings"]["mmsc_url"] = None


def break_vpn(s):
    _connect_vpn(_dev(s))
    _dev(s)["vpn_details"]["server_performance"] = "poor"


def set_wifi_calling(s, enabled: bool, mms_over_wifi: bool | None = None):
    d = _dev(s)
    d["wifi_calling_enabled"] = enabled
    if mms_over_wifi is not None:
        d["wifi_calling_mms_over_wifi"] = mms_over_wifi


def remove_app_permission(s, app_name: str, permission: str):
    app = _dev(s)["app_statuses"].get(app_name)
    if app is not None and permission.lower() in app["permissions"]:
        app["permissions"][permission.lower()] = False


def simulate_network_search(s):
    network_search(s)


def assert_airplane_mode_status(s, expected_status: bool) -> bool:
    return _dev(s)["airplane_mode"] == expected_status


def assert_service_status(s, expected_status: str) -> bool:
    return _dev(s)["network_connection_status"] == expected_status


def assert_mobile_data_status(s, expected_status: bool) -> bool:
    return _data_working(s) == expected_status


def assert_mobile_roaming_status(s, expected_status: bool) -> bool:
    return _dev(s)["roaming_enabled"] == expected_status


def assert_mobile_data_saver_mode_status(s, expected_status: bool) -> bool:
    return _dev(s)["data_saver_mode"] == expected_status


def assert_internet_speed(s, expected_speed: float, expected_desc: str | None = None) -> bool:
    speed, desc = _speed(s)
    speed = speed or 0.0
    return speed >= expected_speed and (expected_desc is None or desc.lower() == expected_desc.lower())


def assert_internet_not_excellent(s) -> bool:
    return _speed(s)[1].lower() != "excellent"


def assert_can_send_mms(s, expected_status: bool) -> bool:
    return _can_send_mms(s) == expected_status


def assert_mobile_data_usage_exceeded(s, expected_status: bool) -> bool:
    return s.user_db["surroundings"]["mobile_data_usage_exceeded"] == expected_status


FUNCTIONS = {
    **{n: t.fn for n, t in TOOLS.items()}, "set_data_usage": set_data_usage,
    "suspend_line_for_overdue_bill": suspend_line_for_overdue_bill,
    "assert_data_refueling_amount": assert_data_refueling_amount, "assert_line_status": assert_line_status,
    "assert_overdue_bill_exists": assert_overdue_bill_exists, "assert_no_overdue_bill": assert_no_overdue_bill,
}
USER_FUNCTIONS = {
    **{n: t.fn for n, t in USER_TOOLS.items()},
    "set_user_info": set_user_info, "set_user_location": set_user_location,
    "turn_airplane_mode_on": turn_airplane_mode_on, "turn_airplane_mode_off": turn_airplane_mode_off,
    "turn_data_on": turn_data_on, "turn_data_off": _force("data_enabled", False),
    "turn_roaming_on": _force("roaming_enabled", True), "turn_roaming_off": _force("roaming_enabled", False),
    "turn_data_saver_mode_on": turn_data_saver_mode_on, "turn_data_saver_mode_off": turn_data_saver_mode_off,
    "unseat_sim_card": unseat_sim_card, "lock_sim_card": lock_sim_card, "break_apn_settings": break_apn_settings,
    "break_apn_mms_setting": break_apn_mms_setting, "break_vpn": break_vpn, "set_wifi_calling": set_wifi_calling,
    "remove_app_permission": remove_app_permission, "simulate_network_search": simulate_network_search,
    "assert_airplane_mode_status": assert_airplane_mode_status, "assert_service_status": assert_service_status,
    "assert_mobile_data_status": assert_mobile_data_status,
    "assert_mobile_roaming_status": assert_mobile_roaming_status,
    "assert_mobile_data_saver_mode_status": assert_mobile_data_saver_mode_status,
    "assert_internet_speed": assert_internet_speed, "assert_internet_not_excellent": assert_internet_not_excellent,
    "assert_can_send_mms": assert_can_send_mms, "assert_mobile_data_usage_exceeded": assert_mobile_data_usage_exceeded,
}

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
            if _awaiting(s, _customer(s, cid)):
                out.append("send_payment_request: a bill is already awaiting payment")
        except ToolError:
            pass
    return out


def identifies(name: str, args: dict, result) -> list | str | None:
    if name in IDENTIFYING:
        rows = result if isinstance(result, list) else [result]
        return [r["customer_id"] for r in rows if isinstance(r, dict) and "customer_id" in r]
    return None
