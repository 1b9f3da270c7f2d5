"""What every page's shell needs: the hosts for the switcher and the current one."""

from appliance.selectors import host_current, host_list


def shell(request):
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"shell_hosts": host_list(request), "current_host": host_current(request)}
