"""The face: the command line and the Textual dashboard. Imports ``core``, never the reverse."""
