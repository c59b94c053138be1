"""turn"""
