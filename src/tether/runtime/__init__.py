"""tether.runtime"""
