"""The ``zombietop`` command line: ``main`` builds the parser and runs a command; ``context`` is
what every command starts from; one module per family of commands (``status``, ``jobs``,
``watch``, ``agent``, ``oncall``)."""
