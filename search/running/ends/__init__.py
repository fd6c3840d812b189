"""How a trial ends: the one decider (`decider`), the study brought up to the trials' files before a session
(`reconcile`), a failed trial's reason in one line (`failures`), and Tune's callbacks that hand each end to the
decider and tell the followers (`callbacks`)."""
