"""tether.executors"""
