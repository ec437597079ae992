"""tether.flow"""
