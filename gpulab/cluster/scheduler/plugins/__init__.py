"""The scheduler plugins, one module (or package) per plugin, as upstream's pkg/scheduler/framework/plugins/<name>.

Each defines a class implementing the extension points of ``..interface`` it
needs; ``..registry`` maps plugin names to those classes.
"""
