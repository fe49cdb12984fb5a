"""The face (see docs/glossary.md): the command line and the Textual dashboard. Imports the
engine, never the reverse.

Installed as ``zombietop.tui`` (the folder is ``tui/``).
"""
