"""Airline agent tools with tau^2-bench's semantics (``tau2/domains/airline/tools.py``).

Prices are whole dollars; new reservations take ids HATHAT, HATHAU, HATHAV and
new certificates ``certificate_3221322..4`` (upstream's fixed ids, so that the gold
replay and the agent's run name them alike); the clock is 2024-05-15T15:00:00.
Upstream quirks kept on purpose, because the gold databases depend on them:
cancelling refunds every payment but does not release seats; changing flights
does not touch seat counts; a negative price difference is "paid" with the given
method (a gift card gains the difference).
"""

from typing import Literal

from scope_envs.games.tau2 import arithmetic
from scope_envs.games.tau2.tools import GENERIC, READ, WRITE, ToolError, collect, record, tool

NOW = "2024-05-15T15:00:00"
FLIGHT = record(flight_number="string", date="string")
PASSENGER = record(first_name="string", last_name="string", dob="string")
PAYMENT = record(payment_id="string", amount="integer")
CABINS = ("business", "economy", "basic_economy")
AIRPORTS = [("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
            ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
            ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
            ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
            ("PHL", "Philadelphia"), ("LGA", "LaGuardia")]


def _user(s, user_id):
    if user_id not in s.db["users"]:
        raise ToolError(f"User {user_id} not found")
    return s.db["users"][user_id]


def _reservation(s, reservation_id):
    if reservation_id not in s.db["reservations"]:
        raise ToolError(f"Reservation {reservation_id} not found")
    return s.db["reservations"][reservation_id]


def _flight(s, flight_number):
    if flight_number not in s.db["flights"]:
        raise ToolError(f"Flight {flight_number} not found")
    return s.db["flights"][flight_number]


def _instance(s, flight_number, date):
    flight = _flight(s, flight_number)
    if date not in flight["dates"]:
        raise ToolError(f"Flight {flight_number} not found on date {date}")
    return flight["dates"][date]


def _search(s, date, origin=None, destination=None, leave_after=None):
    out = []
    for f in s.db["flights"].values():
        inst = f["dates"].get(date)
        if (inst is not None and inst["status"] == "available" and (origin is None or f["origin"] == origin)
                and (destination is None or f["destination"] == destination)
                and (leave_after is None or f["scheduled_departure_time_est"] >= leave_after)):
            out.append({"flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"],
                        "status": "available", "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                        "scheduled_arrival_time_est": f["scheduled_arrival_time_est"], "date": None,
                        "available_seats": dict(inst["available_seats"]), "prices": dict(inst["prices"])})
    return out


def _pay_for_update(s, user_id, payment_id, total):
    """Check and charge ``total`` to a saved method; the new payment entry or None when free."""
    user = s.db["users"][user_id]
    if payment_id not in user["payment_methods"]:
        raise ToolError("Payment method not found")
    method = user["payment_methods"][payment_id]
    if method["source"] == "certificate":
        raise ToolError("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total:
        raise ToolError("Gift card balance is not enough")
    if method["source"] == "gift_card":
        s.db["users"].mut(user_id)["payment_methods"][payment_id]["amount"] -= total
    return {"payment_id": payment_id, "amount": total} if total != 0 else None


@tool(WRITE, "Book a reservation.",
      user_id="The ID of the user to book the reservation such as 'sara_doe_496'.",
      origin="The IATA code for the origin city such as 'SFO'.",
      destination="The IATA code for the destination city such as 'JFK'.",
      flight_type="The type of flight such as 'one_way' or 'round_trip'.",
      cabin="The cabin class such as 'basic_economy', 'economy', or 'business'.",
      flights="An array of objects containing details about each piece of flight (flight_number, date).",
      passengers="An array of objects containing details about each passenger (first_name, last_name, dob).",
      payment_methods="An array of objects containing details about each payment method (payment_id, amount).",
      total_baggages="The total number of baggage items to book the reservation.",
      nonfree_baggages="The number of non-free baggage items to book the reservation.",
      insurance="Whether the reservation has insurance.")
def book_reservation(s, user_id: str, origin: str, destination: str, flight_type: Literal["round_trip", "one_way"],
                     cabin: Literal[CABINS], flights: list[FLIGHT], passengers: list[PASSENGER],
                     payment_methods: list[PAYMENT], total_baggages: int, nonfree_baggages: int,
                     insurance: Literal["yes", "no"]):
    user = _user(s, user_id)
    rid = next((r for r in ("HATHAT", "HATHAU", "HATHAV") if r not in s.db["reservations"]), None)
    if rid is None:
        raise ToolError("Too many reservations")
    reservation = {"reservation_id": rid, "user_id": user_id, "origin": origin, "destination": destination,
                   "flight_type": flight_type, "cabin": cabin, "flights": [],
                   "passengers": [dict(p) for p in passengers], "payment_history": [dict(p) for p in payment_methods],
                   "created_at": NOW, "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
                   "insurance": insurance, "status": None}
    total, booked = 0, []
    for info in flights:
        flight = _flight(s, info["flight_number"])
        inst = _instance(s, info["flight_number"], info["date"])
        if inst["status"] != "available":
            raise ToolError(f"Flight {info['flight_number']} not available on date {info['date']}")
        if inst["available_seats"][cabin] < len(passengers):
            raise ToolError(f"Not enough seats on flight {info['flight_number']}")
        price = inst["prices"][cabin]
        reservation["flights"].append({"origin": flight["origin"], "destination": flight["destination"],
                                       "flight_number": info["flight_number"], "date": info["date"], "price": price})
        booked.append(info)
        total += price * len(passengers)
    if insurance == "yes":
        total += 30 * len(passengers)
    total += 50 * nonfree_baggages
    for p in payment_methods:
        if p["payment_id"] not in user["payment_methods"]:
            raise ToolError(f"Payment method {p['payment_id']} not found")
        method = user["payment_methods"][p["payment_id"]]
        if method["source"] in ("gift_card", "certificate") and method["amount"] < p["amount"]:
            raise ToolError(f"Not enough balance in payment method {p['payment_id']}")
    paid = sum(p["amount"] for p in payment_methods)
    if paid != total:
        raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
    user = s.db["users"].mut(user_id)
    for p in payment_methods:
        method = user["payment_methods"].get(p["payment_id"])
        if method is None:  # a certificate listed twice: upstream fails on the second pop
            raise ToolError(f"'{p['payment_id']}'")
        if method["source"] == "gift_card":
            method["amount"] -= p["amount"]
        elif method["source"] == "certificate":
            user["payment_methods"].pop(p["payment_id"])
    for info in booked:
        s.db["flights"].mut(info["flight_number"])["dates"][info["date"]]["available_seats"][cabin] -= len(passengers)
    s.db["reservations"][rid] = reservation
    user["reservations"].append(rid)
    return reservation


@tool(GENERIC, "Calculate the result of a mathematical expression.",
      expression="The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, "
                 "operators (+, -, *, /), parentheses, and spaces.")
def calculate(s, expression: str):
    return arithmetic.calculate(expression)  # upstream's eval, bounded (arithmetic.py)


@tool(WRITE, "Cancel the whole reservation.", reservation_id="The reservation ID, such as 'ZFA04Y'.")
def cancel_reservation(s, reservation_id: str):
    _reservation(s, reservation_id)
    res = s.db["reservations"].mut(reservation_id)
    res["payment_history"].extend([{"payment_id": p["payment_id"], "amount": -p["amount"]}
                                   for p in res["payment_history"]])
    res["status"] = "cancelled"
    return res


@tool(READ, "Get the details of a reservation.", reservation_id="The reservation ID, such as '8JX2WO'.")
def get_reservation_details(s, reservation_id: str):
    return _reservation(s, reservation_id)


@tool(READ, "Get the details of a user, including their reservations.", user_id="The user ID, such as 'sara_doe_496'.")
def get_user_details(s, user_id: str):
    return _user(s, user_id)


@tool(READ, "Returns a list of all available airports.")
def list_all_airports(s):
    return [{"iata": i, "city": c} for i, c in AIRPORTS]


@tool(READ, "Search for direct flights between two cities on a specific date.",
      origin="The origin city airport in three letters, such as 'JFK'.",
      destination="The destination city airport in three letters, such as 'LAX'.",
      date="The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.")
def search_direct_flight(s, origin: str, destination: str, date: str):
    return _search(s, date, origin, destination)


@tool(READ, "Search for one-stop flights between two cities on a specific date.",
      origin="The origin city airport in three letters, such as 'JFK'.",
      destination="The destination city airport in three letters, such as 'LAX'.",
      date="The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.")
def search_onestop_flight(s, origin: str, destination: str, date: str):
    out = []
    for first in _search(s, date, origin, None):
        first["date"] = date
        # upstream's next-day date is not zero-padded ("2024-05-6"); kept, it decides what is found
        date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
        for second in _search(s, date2, first["destination"], destination, first["scheduled_arrival_time_est"]):
            second["date"] = date2
            out.append([first, second])
    return out


@tool(WRITE, "Send a certificate to a user. Be careful!",
      user_id="The ID of the user to book the reservation, such as 'sara_doe_496'.",
      amount="The amount of the certificate to send.")
def send_certificate(s, user_id: str, amount: int):
    _user(s, user_id)
    for pid in ("certificate_3221322", "certificate_3221323", "certificate_3221324"):
        if pid not in s.db["users"][user_id]["payment_methods"]:
            s.db["users"].mut(user_id)["payment_methods"][pid] = {"source": "certificate", "id": pid,
                                                                   "amount": float(amount)}
            return f"Certificate {pid} added to user {user_id} with amount {amount}."
    raise ToolError("Too many certificates")


@tool(GENERIC, "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user "
               "explicitly asks for a human agent, or given the policy and the available tools, you cannot solve "
               "the user's issue.", summary="A summary of the user's issue.")
def transfer_to_human_agents(s, summary: str):
    return "Transfer successful"


@tool(WRITE, "Update the baggage information of a reservation.",
      reservation_id="The reservation ID, such as 'ZFA04Y'",
      total_baggages="The updated total number of baggage items included in the reservation.",
      nonfree_baggages="The updated number of non-free baggage items included in the reservation.",
      payment_id="The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', "
                 "'certificate_7815826'.")
def update_reservation_baggages(s, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str):
    res = _reservation(s, reservation_id)
    _user(s, res["user_id"])
    total = 50 * max(0, nonfree_baggages - res["nonfree_baggages"])
    payment = _pay_for_update(s, res["user_id"], payment_id, total)
    res = s.db["reservations"].mut(reservation_id)
    if payment is not None:
        res["payment_history"].append(payment)
    res["total_baggages"] = total_baggages
    res["nonfree_baggages"] = nonfree_baggages
    return res


@tool(WRITE, "Update the flight information of a reservation.",
      reservation_id="The reservation ID, such as 'ZFA04Y'.",
      cabin="The cabin class of the reservation",
      flights="An array of objects containing details about each piece of flight in the ENTIRE new reservation. "
              "Even if the a flight segment is not changed, it should still be included in the array.",
      payment_id="The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', "
                 "'certificate_7815826'.")
def update_reservation_flights(s, reservation_id: str, cabin: Literal[CABINS], flights: list[FLIGHT],
                               payment_id: str):
    res = _reservation(s, reservation_id)
    _user(s, res["user_id"])
    n = len(res["passengers"])
    total, new_flights = 0, []
    for info in flights:
        same = next((f for f in res["flights"] if f["flight_number"] == info["flight_number"]
                     and f["date"] == info["date"] and cabin == res["cabin"]), None)
        if same is not None:
            total += same["price"] * n
            new_flights.append(dict(same))
            continue
        flight = _flight(s, info["flight_number"])
        inst = _instance(s, info["flight_number"], info["date"])
        if inst["status"] != "available":
            raise ToolError(f"Flight {info['flight_number']} not available on date {info['date']}")
        if inst["available_seats"][cabin] < n:
            raise ToolError(f"Not enough seats on flight {info['flight_number']}")
        new_flights.append({"flight_number": info["flight_number"], "date": info["date"],
                            "price": inst["prices"][cabin], "origin": flight["origin"],
                            "destination": flight["destination"]})
        total += inst["prices"][cabin] * n
    total -= sum(f["price"] for f in res["flights"]) * n
    payment = _pay_for_update(s, res["user_id"], payment_id, total)
    res = s.db["reservations"].mut(reservation_id)
    if payment is not None:
        res["payment_history"].append(payment)
    res["flights"] = new_flights
    res["cabin"] = cabin
    return res


@tool(WRITE, "Update the passenger information of a reservation.",
      reservation_id="The reservation ID, such as 'ZFA04Y'.",
      passengers="An array of objects containing details about each passenger (first_name, last_name, dob).")
def update_reservation_passengers(s, reservation_id: str, passengers: list[PASSENGER]):
    res = _reservation(s, reservation_id)
    if len(passengers) != len(res["passengers"]):
        raise ToolError("Number of passengers does not match")
    res = s.db["reservations"].mut(reservation_id)
    res["passengers"] = [dict(p) for p in passengers]
    return res


@tool(READ, "Get the status of a flight.", flight_number="The flight number.", date="The date of the flight.")
def get_flight_status(s, flight_number: str, date: str):
    return _instance(s, flight_number, date)["status"]


TOOLS = collect(globals())
USER_TOOLS: dict = {}
FUNCTIONS = {name: t.fn for name, t in TOOLS.items()}  # what initialization actions / assertions may call


def _eligible_cancel(s, res) -> bool:
    if res.get("created_at", "") >= "2024-05-14T15:00:00":  # booked within the last 24 hours
        return True
    if res.get("cabin") == "business" or res.get("insurance") == "yes":
        return True
    flights = s.db["flights"]
    return any(f["flight_number"] in flights
               and flights[f["flight_number"]]["dates"].get(f["date"], {}).get("status") == "cancelled"
               for f in res.get("flights", []))


def violations(s, name: str, args: dict, seen_users: set) -> list[str]:
    """Mechanically checkable airline policy rules broken by this call (recorded, never blocked)."""
    out = []
    if TOOLS[name].kind != WRITE:
        return out
    uid = args.get("user_id")
    res = s.db["reservations"].get(args.get("reservation_id")) if "reservation_id" in args else None
    if res is not None:
        uid = res["user_id"]
    if uid is not None and uid not in seen_users:
        out.append(f"{name}: user {uid} was not identified with get_user_details before a write")
    if name == "cancel_reservation" and res is not None and not _eligible_cancel(s, res):
        out.append(f"cancel_reservation: {res['reservation_id']} is not eligible for cancellation "
                   "(not within 24h, no insurance, not business, no cancelled flight)")
    if name == "update_reservation_flights" and res is not None and res["cabin"] == "basic_economy":
        out.append(f"update_reservation_flights: {res['reservation_id']} is basic economy and cannot be modified")
    if name == "book_reservation" and len(args.get("passengers") or []) > 5:
        out.append("book_reservation: more than five passengers")
    return out


def identifies(name: str, args: dict, result) -> str | None:
    """The user id a successful read call identifies (authentication tracking)."""
    if name == "get_user_details":
        return args.get("user_id")
    return None
