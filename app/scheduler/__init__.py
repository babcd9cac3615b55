"""The scheduling algorithm and cycle shared by all of berth's faces (``pkg/scheduler``)."""
