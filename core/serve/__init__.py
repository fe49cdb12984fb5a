"""``zombietop serve``: jobs on hosts without zombietop report over HTTP, in healthchecks' URL
shape (``/ping/<key>/<job>/start``). One module per concern: ``keys`` (the credential),
``rate`` (the limit per job), ``pings`` (what a ping does to the store), ``routes`` (the URLs,
the bounded body), ``server`` (the routes on one bounded server, loopback unless a key is set)
and ``metrics`` (``--metrics``: its own figures on the same port)."""
