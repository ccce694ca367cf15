resource {}
