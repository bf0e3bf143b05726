"""The DynamicResources plugin (:mod:`.plugin`) and its state across cycles (:mod:`.tracker`)."""
