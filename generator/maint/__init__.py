"""maint"""
