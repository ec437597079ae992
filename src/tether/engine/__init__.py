"""tether.engine"""
