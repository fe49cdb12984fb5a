"""``zombietop serve``: jobs on hosts without zombietop report over HTTP, in healthchecks' URL
shape (``/ping/<key>/<job>/start``). One module per concern: ``keys`` (the credential),
``rate`` (the limit per job), ``pings`` (what a ping does to the store) and ``routes`` (the
URLs, the bounded body)."""
