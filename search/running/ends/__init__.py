"""How a trial ends: the one decider (`decider`); before a session, the study brought up to the trials' files and
the trials a budget stopped continued (`reconcile`); a failed trial's reason in one line (`failures`); and Tune's
callbacks that hand each end to the decider and tell the followers (`callbacks`)."""
