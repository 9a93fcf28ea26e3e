"""``wsserver serve --workers N``: one parent process supervising N worker processes."""
