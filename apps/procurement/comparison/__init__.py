"""A procurement scenario compared: the framework-free maths (maths.py), the demand read
from telemetry (demand.py), each option priced (options.py), the network requirements
(regions.py), the what-if inputs, the SkyPilot price import, and the comparison the page,
the API and the exports show (services.py)."""
