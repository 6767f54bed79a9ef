/*
** points.c: the hook of the named points (points.h), in test builds only.
*/
#include "internal.h"

#include "points.h"

#if defined(RT_TESTING) && RT_TESTING
rt__point_fn rt__point_hook;
#else
/* A release build has no points: this file is empty there. */
typedef int rt__no_points;
#endif
