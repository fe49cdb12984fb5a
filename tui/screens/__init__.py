"""The dashboard's screens: the task list, the wall, a task's detail, the help, and the dialogs
that confirm an action or ask on-call for a reason. Each takes one frozen state
(``zombietop.tui.screen_state``) and sends messages up to the app."""
