"""What both services run that is neither a decision nor HTTP: the interception CA's files.

The proxy and the resolver each create the deployment's CA if it is absent (`services/ca.py`);
the proxy imports no resolver module, so the one function they share lives here, beside both.
"""
