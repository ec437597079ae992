"""tether.stores"""
