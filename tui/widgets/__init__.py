"""The widgets the screens are made of: the header with its counts, the task list, the banner
that says when data is old, the events pane, the wall's health cards and worst offenders."""
