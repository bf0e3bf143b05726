"""The embedded cluster's scheduler: kube-scheduler v1.37 behaviour, plus scheduler-plugins' coscheduling.

``Scheduler`` is the component the runtime starts; ``ProfileScheduler`` runs
one profile and can be driven synchronously (``schedule_next``) in tests.
Plugins live in ``plugins/``, one module per plugin behind the interface of
``interface``; ``registry`` names them and ``profiles`` lists each profile's
plugins as data.
"""
from .component import Scheduler
from .profile_scheduler import ProfileScheduler
from .profiles import DEFAULT_PROFILE, PLUGINS_PROFILE, Profile

__all__ = ["DEFAULT_PROFILE", "PLUGINS_PROFILE", "Profile", "ProfileScheduler", "Scheduler"]
