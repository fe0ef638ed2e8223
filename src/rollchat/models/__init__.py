"""What rollchat knows of models: token counts, context windows (built in and learned), prices."""
