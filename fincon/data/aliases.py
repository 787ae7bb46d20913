"""Who the bundled tickers are: names, aliases and people, for masking.

A model may recognise a firm by any of its names or by the people who run
it, so masking a prompt (``--anonymize``, fincon.llm.masking) replaces all of
them. One row per bundled ticker (the 42 of ``fincon/data/sample/prices``):
its legal and common names, brands a news item uses for the firm itself, and
the chief executives and founders of 2018-2024. Imported datasets add their
own names (``dataset.json``'s ``names``), and ``--alias TICKER=NAME`` adds
more. Over-masking (a common word that is also a name) is the safe side.
"""

from __future__ import annotations

#: ticker -> names and aliases of the firm (matched as whole words, as written or in capitals)
NAMES: dict[str, tuple[str, ...]] = {
    "AAPL": ("Apple Inc.", "Apple Inc", "Apple", "iPhone"),
    "ABBV": ("AbbVie Inc.", "AbbVie", "Humira"),
    "ADBE": ("Adobe Inc.", "Adobe Systems", "Adobe"),
    "AMD": ("Advanced Micro Devices", "AMD"),
    "AMZN": ("Amazon.com", "Amazon", "AWS", "Amazon Web Services"),
    "BA": ("The Boeing Company", "Boeing"),
    "BAC": ("Bank of America", "BofA", "Merrill Lynch"),
    "CAT": ("Caterpillar Inc.", "Caterpillar"),
    "COIN": ("Coinbase Global", "Coinbase"),
    "COST": ("Costco Wholesale", "Costco"),
    "CRM": ("Salesforce.com", "Salesforce"),
    "CSCO": ("Cisco Systems", "Cisco"),
    "CVX": ("Chevron Corporation", "Chevron"),
    "DIS": ("The Walt Disney Company", "Walt Disney", "Disney", "Disney+"),
    "GE": ("General Electric", "GE Aerospace", "GE HealthCare", "GE Vernova"),
    "GM": ("General Motors", "Chevrolet"),
    "GOOG": ("Alphabet Inc.", "Alphabet", "Google", "YouTube"),
    "HD": ("The Home Depot", "Home Depot"),
    "INTC": ("Intel Corporation", "Intel"),
    "JNJ": ("Johnson & Johnson", "Johnson and Johnson", "J&J"),
    "JPM": ("JPMorgan Chase", "JPMorgan", "J.P. Morgan"),
    "KO": ("The Coca-Cola Company", "Coca-Cola", "Coke"),
    "LLY": ("Eli Lilly and Company", "Eli Lilly", "Lilly", "Mounjaro"),
    "MA": ("Mastercard Incorporated", "Mastercard"),
    "META": ("Meta Platforms", "Meta", "Facebook", "Instagram", "WhatsApp"),
    "MRK": ("Merck & Co.", "Merck", "Keytruda"),
    "MSFT": ("Microsoft Corporation", "Microsoft", "Azure"),
    "NFLX": ("Netflix Inc.", "Netflix"),
    "NIO": ("NIO Inc.", "Nio"),
    "NKE": ("Nike Inc.", "Nike"),
    "NVDA": ("Nvidia Corporation", "Nvidia", "GeForce"),
    "ORCL": ("Oracle Corporation", "Oracle"),
    "PEP": ("PepsiCo", "Pepsi", "Frito-Lay"),
    "PFE": ("Pfizer Inc.", "Pfizer", "Comirnaty", "Paxlovid"),
    "PG": ("Procter & Gamble", "Procter and Gamble", "P&G"),
    "T": ("AT&T Inc.", "AT&T"),
    "TSLA": ("Tesla Inc.", "Tesla Motors", "Tesla"),
    "UNH": ("UnitedHealth Group", "UnitedHealth", "Optum"),
    "V": ("Visa Inc.", "Visa"),
    "VZ": ("Verizon Communications", "Verizon"),
    "WMT": ("Walmart Inc.", "Wal-Mart", "Walmart"),
    "XOM": ("Exxon Mobil", "ExxonMobil", "Exxon", "Mobil"),
}

#: ticker -> people a news item names for the firm (chief executives and founders, 2018-2024)
PEOPLE: dict[str, tuple[str, ...]] = {
    "AAPL": ("Tim Cook", "Luca Maestri"),
    "ABBV": ("Richard Gonzalez", "Robert Michael"),
    "ADBE": ("Shantanu Narayen",),
    "AMD": ("Lisa Su",),
    "AMZN": ("Jeff Bezos", "Andy Jassy"),
    "BA": ("Dennis Muilenburg", "Dave Calhoun", "David Calhoun"),
    "BAC": ("Brian Moynihan",),
    "CAT": ("Jim Umpleby",),
    "COIN": ("Brian Armstrong",),
    "COST": ("Craig Jelinek", "Ron Vachris"),
    "CRM": ("Marc Benioff",),
    "CSCO": ("Chuck Robbins",),
    "CVX": ("Mike Wirth",),
    "DIS": ("Bob Iger", "Bob Chapek"),
    "GE": ("Larry Culp", "H. Lawrence Culp"),
    "GM": ("Mary Barra",),
    "GOOG": ("Sundar Pichai", "Larry Page", "Sergey Brin"),
    "HD": ("Craig Menear", "Ted Decker"),
    "INTC": ("Bob Swan", "Pat Gelsinger"),
    "JNJ": ("Alex Gorsky", "Joaquin Duato"),
    "JPM": ("Jamie Dimon",),
    "KO": ("James Quincey",),
    "LLY": ("David Ricks",),
    "MA": ("Ajay Banga", "Michael Miebach"),
    "META": ("Mark Zuckerberg", "Sheryl Sandberg"),
    "MRK": ("Ken Frazier", "Robert Davis"),
    "MSFT": ("Satya Nadella", "Bill Gates", "Amy Hood"),
    "NFLX": ("Reed Hastings", "Ted Sarandos", "Greg Peters"),
    "NIO": ("William Li", "Li Bin"),
    "NKE": ("John Donahoe", "Mark Parker"),
    "NVDA": ("Jensen Huang",),
    "ORCL": ("Safra Catz", "Larry Ellison"),
    "PEP": ("Ramon Laguarta",),
    "PFE": ("Albert Bourla",),
    "PG": ("David Taylor", "Jon Moeller"),
    "T": ("John Stankey", "Randall Stephenson"),
    "TSLA": ("Elon Musk", "Zachary Kirkhorn", "Vaibhav Taneja"),
    "UNH": ("Andrew Witty", "David Wichmann"),
    "V": ("Al Kelly", "Ryan McInerney"),
    "VZ": ("Hans Vestberg",),
    "WMT": ("Doug McMillon",),
    "XOM": ("Darren Woods",),
}
