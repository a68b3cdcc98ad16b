"""JSON API of tasks, kernels and the leaderboard (mounted under /api/)."""
urlpatterns = []
